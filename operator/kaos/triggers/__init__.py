"""Triggers: the pure core (no I/O) of the Trigger kind, used by both control planes.

- ``schedule``: cron expressions in a time zone; due and missed times (croniter)
- ``tick``: one look at a schedule: what runs now, what is skipped, lastRun/nextRun
- ``signature``: the webhook's HMAC-SHA256 signature, checked in constant time
- ``message``: ``spec.message`` with ``{{ .body }}`` placeholders filled in, safely
- ``runs``: the runs of one Trigger (concurrencyPolicy, replays, the bounded history)
- ``spec``: a validated Trigger's spec, with the checks the CRD schema cannot make
- ``status``: the status to write
- ``webhook``: whether a webhook call may start a run, and the answer
"""

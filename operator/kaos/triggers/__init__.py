"""Triggers: the pure core (no I/O) of the Trigger kind, used by both control planes.

- ``schedule``: cron expressions in a time zone; due and missed times (croniter)
- ``tick``: one look at a schedule: what runs now, what is skipped, lastRun/nextRun
- ``signature``: the webhook's HMAC-SHA256 signature over its timestamp, delivery id and body
- ``message``: ``spec.message`` with ``{{ .body }}`` placeholders filled in, safely
- ``runs``: the runs of one Trigger (concurrencyPolicy, the cap on runs, replays, the bounded history)
- ``deliveries``: the webhook deliveries remembered for their window, apart from the history
- ``times``: times as status writes them
- ``spec``: a validated Trigger's spec, with the checks the CRD schema cannot make
- ``status``: the status to write
- ``webhook``: whether a webhook call may start a run, and the answer (one for all who lack the key)
"""

"""The runs of one Trigger: those in progress and a bounded history, as status shows them.

``RunBook`` does no I/O: the control plane that executes runs asks it whether a run may start
(``concurrencyPolicy``, ``limits.maxConcurrentRuns``, replayed webhook deliveries), tells it how
each run ended, and writes ``active``, ``history`` and ``deliveries`` into the Trigger's status.
The history keeps the newest ``historyLimit`` runs and, apart from them, the newest SKIPS_KEPT
Skipped entries: a skip never pushes a run out.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Iterable, Mapping

from kaos.triggers.deliveries import MAX_REMEMBERED, Deliveries
from kaos.triggers.times import parse_time, timestamp

SUCCEEDED, FAILED, TIMED_OUT, SKIPPED = "Succeeded", "Failed", "TimedOut", "Skipped"
OUTCOMES = (SUCCEEDED, FAILED, TIMED_OUT, SKIPPED)
SCHEDULE, WEBHOOK, MANUAL = "schedule", "webhook", "manual"
ALLOW, FORBID, REPLACE = "Allow", "Forbid", "Replace"
NEW_SESSION = "new"
SUMMARY_MAX = 200
DEFAULT_HISTORY_LIMIT = 10
DEFAULT_MAX_CONCURRENT_RUNS = 5
SKIPS_KEPT = 5  # Skipped entries the history keeps, apart from its historyLimit runs
# What a call refused for limits.maxConcurrentRuns is told to wait (Retry-After, seconds).
BUSY_RETRY_SECONDS = 5


def summary(text: str | None) -> str:
    """The first SUMMARY_MAX characters of an answer or an error."""
    return (text or "")[:SUMMARY_MAX]


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]


@dataclass(frozen=True)
class Run:
    """One run: where it came from and the session its events go to."""

    run_id: str
    source: str  # schedule | webhook | manual
    session_id: str
    start: datetime
    scheduled: datetime | None = None
    delivery_id: str | None = None

    def active_entry(self) -> dict[str, Any]:
        entry = {"runId": self.run_id, "sessionId": self.session_id, "startTime": timestamp(self.start),
                 "source": self.source}
        if self.delivery_id:
            entry["deliveryId"] = self.delivery_id
        return entry

    def entry(self, outcome: str, end: datetime, text: str | None = None, tokens: int = 0) -> dict[str, Any]:
        """The history entry of this run ended with ``outcome``."""
        result = {"runId": self.run_id, "source": self.source, "outcome": outcome, "sessionId": self.session_id,
                  "startTime": timestamp(self.start), "endTime": timestamp(end), "tokens": int(tokens),
                  "summary": summary(text)}
        if self.scheduled is not None:
            result["scheduledTime"] = timestamp(self.scheduled)
        if self.delivery_id:
            result["deliveryId"] = self.delivery_id
        return result


def run_from_active(entry: Mapping[str, Any]) -> Run:
    return Run(run_id=entry["runId"], source=entry.get("source") or MANUAL, session_id=entry.get("sessionId") or "",
               start=parse_time(entry.get("startTime")) or datetime.now(timezone.utc),
               delivery_id=entry.get("deliveryId"))


def session_for(setting: str, trigger: str, run_id: str) -> str:
    """The session a run's events go to: a fresh ``trigger-<name>-<run id>`` for ``new``, else the fixed id."""
    return f"trigger-{trigger}-{run_id}" if setting == NEW_SESSION else setting


@dataclass(frozen=True)
class Start:
    """What ``RunBook.start`` decided: ``run`` to execute (None when skipped, refused or a
    replay), ``replace`` the runs to stop first, ``skipped`` the history entry of a run not
    started, ``original`` the earlier run of a replayed delivery, ``busy`` why a limit refused it
    (a 429: try again in ``retry_after`` seconds)."""

    run: Run | None
    replace: tuple[str, ...] = ()
    skipped: dict[str, Any] | None = None
    original: Mapping[str, Any] | None = None
    busy: str | None = None
    retry_after: int = 0


@dataclass
class RunBook:
    trigger: str
    history_limit: int = DEFAULT_HISTORY_LIMIT
    history: list[dict[str, Any]] = field(default_factory=list)
    active: dict[str, Run] = field(default_factory=dict)
    new_id: Callable[[], str] = new_run_id
    deliveries: Deliveries = field(default_factory=Deliveries)

    @classmethod
    def from_status(cls, trigger: str, status: Mapping[str, Any] | None, history_limit: int,
                    now: datetime, new_id: Callable[[], str] = new_run_id) -> "RunBook":
        """The book as status left it. Runs it lists as active belonged to a control plane that
        stopped (this one has not started any): each is ended as Failed, never run again. The
        deliveries it remembers are remembered until they expire."""
        status = status or {}
        book = cls(trigger, history_limit, [dict(e) for e in status.get("history") or []], {}, new_id,
                   Deliveries.from_status(status.get("deliveries"), now))
        for entry in status.get("active") or []:
            book._record(run_from_active(entry).entry(
                FAILED, now, "interrupted: the control plane stopped while the run was in progress"))
        book._record_bound()
        return book

    def start(self, source: str, now: datetime, policy: str, session: str, *,
              scheduled: datetime | None = None, delivery_id: str | None = None, signed_at: datetime | None = None,
              max_concurrent: int = DEFAULT_MAX_CONCURRENT_RUNS) -> Start:
        """Whether a run starts now; a started run is active until ``finish``. A delivery already
        run answers with its first run (``signed_at``: its call's timestamp, which says how long
        it is remembered). Past ``max_concurrent`` runs (concurrencyPolicy Allow) a webhook call
        is refused and not recorded (its sender is told); any other run not started is Skipped."""
        if delivery_id:
            original = self.delivery(delivery_id, now)
            if original is not None:
                return Start(None, original=original)
        run_id = self.new_id()
        run = Run(run_id, source, session_for(session, self.trigger, run_id), now, scheduled, delivery_id)
        if self.active and policy == FORBID:
            running = ", ".join(sorted(self.active))
            entry = run.entry(SKIPPED, now, f"skipped: concurrencyPolicy Forbid and run {running} is in progress")
            self._record(entry)
            return Start(None, skipped=entry)
        if policy == ALLOW and len(self.active) >= max_concurrent:
            busy = f"limits.maxConcurrentRuns ({max_concurrent}) runs are in progress"
            skipped = None
            if source != WEBHOOK:
                skipped = run.entry(SKIPPED, now, f"skipped: {busy}")
                self._record(skipped)
            return Start(None, skipped=skipped, busy=busy, retry_after=BUSY_RETRY_SECONDS)
        if delivery_id and self.deliveries.full(now):
            return Start(None, busy=f"{MAX_REMEMBERED} deliveries that started a run are remembered now "
                                    "(replays are refused for their window)",
                         retry_after=self.deliveries.retry_after(now))
        replace = tuple(sorted(self.active)) if policy == REPLACE else ()
        self.active[run_id] = run
        if delivery_id:
            self.deliveries.remember(delivery_id, run_id, run.session_id, signed_at or now, now)
        return Start(run, replace=replace)

    def finish(self, run_id: str, outcome: str, end: datetime, text: str | None = None, tokens: int = 0) -> dict:
        """End an active run; returns its history entry."""
        run = self.active.pop(run_id, None)
        if run is None:
            raise KeyError(f"run {run_id} is not in progress")
        entry = run.entry(outcome, end, text, tokens)
        self._record(entry)
        return entry

    def skip(self, source: str, now: datetime, reason: str, *, scheduled: datetime | None = None) -> dict:
        """Record a run that did not start (missed due times)."""
        run_id = self.new_id()
        entry = Run(run_id, source, "", now, scheduled).entry(SKIPPED, now, reason)
        self._record(entry)
        return entry

    def delivery(self, delivery_id: str, now: datetime) -> Mapping[str, Any] | None:
        """The run of a webhook delivery seen before: remembered (within its window), in progress
        or in the history. A skipped or refused delivery did not run: a redelivery may."""
        remembered = self.deliveries.find(delivery_id, now)
        if remembered is not None:
            return {"runId": remembered.run_id, "sessionId": remembered.session_id}
        for run in self.active.values():
            if run.delivery_id == delivery_id:
                return run.active_entry()
        return next((e for e in reversed(self.history)
                     if e.get("deliveryId") == delivery_id and e.get("outcome") != SKIPPED), None)

    def abandon(self, run_id: str) -> None:
        """Forget a run that was never sent (its start could not be recorded): no history entry,
        and its delivery is not remembered."""
        run = self.active.pop(run_id, None)
        if run is not None and run.delivery_id:
            self.deliveries.forget(run.delivery_id)

    def resize(self, history_limit: int) -> None:
        self.history_limit = history_limit
        self._record_bound()

    def status(self) -> dict[str, list]:
        """The status fields this book owns."""
        found = {"active": [run.active_entry() for run in self.active.values()], "history": list(self.history)}
        if self.deliveries.remembered:
            found["deliveries"] = self.deliveries.status()
        return found

    def _record(self, entry: dict[str, Any]) -> None:
        self.history.append(entry)
        self._record_bound()

    def _record_bound(self) -> None:
        """The newest ``history_limit`` runs and the newest SKIPS_KEPT skips, in their order."""
        kept, runs, skips = [], 0, 0
        for entry in reversed(self.history):
            if entry.get("outcome") == SKIPPED:
                skips += 1
                keep = skips <= SKIPS_KEPT
            else:
                runs += 1
                keep = runs <= self.history_limit
            if keep:
                kept.append(entry)
        self.history[:] = kept[::-1]


def last_outcome(history: Iterable[Mapping[str, Any]]) -> str | None:
    entries = list(history)
    return entries[-1].get("outcome") if entries else None

"""One look at a Trigger's schedule: what runs now, what was missed, and the lastRun/nextRun to write.

The control plane persists ``lastRun`` (with the started run among ``active``) before it sends
the run's message, so a restart finds the due time handled and never fires it again; a restart
that happens before that write finds it unhandled and fires it, at most ``startingDeadlineSeconds``
late. A run whose message was sent when the control plane stopped is in ``active``, and the next
control plane ends it as Failed (``RunBook.from_status``): at most once, and never silently lost.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from kaos.triggers.runs import timestamp
from kaos.triggers.schedule import due
from kaos.triggers.spec import TriggerSpec


@dataclass(frozen=True)
class Tick:
    run: datetime | None  # the due time to run now
    skipped: str | None  # why missed due times were not run (one history entry), if any
    skipped_at: datetime | None  # the latest of them
    last_run: datetime  # status.lastRun
    next_run: datetime  # status.nextRun


def schedule_tick(spec: TriggerSpec, last_run: datetime | None, created: datetime, now: datetime) -> Tick:
    """``last_run``: status.lastRun (None before the first due time); ``created``: the Trigger's
    creation time, so that a new Trigger does not run for due times before it existed. Due
    times that pass while the Trigger is suspended are handled without running."""
    assert spec.schedule is not None
    found = due(spec.schedule, last_run or created, now, spec.starting_deadline)
    if spec.suspend:
        return Tick(None, None, None, found.handled, found.next_run)
    reason = None
    if found.skipped:
        count = f"{len(found.skipped)}{' or more' if found.more_skipped else ''}"
        span = timestamp(found.skipped[0])
        if len(found.skipped) > 1:
            span += f" to {timestamp(found.skipped[-1])}"
        why = (f"the run due at {timestamp(found.run)} catches up for them" if found.run else
               f"older than startingDeadlineSeconds ({spec.starting_deadline:g} s)")
        reason = f"skipped: {count} due time(s) missed while no control plane was running, or it fell behind ({span}); {why}"
    return Tick(found.run, reason, found.skipped[-1] if found.skipped else None, found.handled, found.next_run)

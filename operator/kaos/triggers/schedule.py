"""When a Trigger's schedule is due: cron expressions in a time zone (croniter), and the due
times missed since the last one handled.

A due time is handled once: it is run, or recorded as Skipped. ``status.lastRun`` holds the
latest handled due time, so a control plane that starts (again) derives from it what it missed:
the latest missed due time runs if it is no older than ``startingDeadlineSeconds``; every other
missed one is Skipped (one run catches up, as a CronJob does, not one per missed time).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter
from croniter.croniter import CroniterError

UTC = timezone.utc
# Missed due times counted one by one, at most; past it the count says "or more".
MISSED_COUNTED = 100
MACROS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")


class ScheduleError(ValueError):
    """A schedule that cannot run as written; the message says what is wrong."""


@dataclass(frozen=True)
class Schedule:
    """A cron expression (5 fields, an optional 6th of seconds, or a macro such as @daily) in a time zone."""

    expression: str
    time_zone: str = "UTC"

    def __post_init__(self) -> None:
        fields = self.expression.split()
        if not (fields and (fields[0] in MACROS and len(fields) == 1 or len(fields) in (5, 6))):
            raise ScheduleError(
                f"schedule: {self.expression!r} is not a cron expression (5 fields: minute hour day-of-month "
                f"month day-of-week, an optional 6th of seconds, or one of {', '.join(MACROS)})")
        if not croniter.is_valid(self.expression):
            raise ScheduleError(f"schedule: {self.expression!r} is not a valid cron expression")
        try:
            ZoneInfo(self.time_zone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ScheduleError(f"timeZone: {self.time_zone!r} is not an IANA time zone (e.g. Europe/Paris)") from None

    def _iterator(self, start: datetime) -> croniter:
        try:
            return croniter(self.expression, start.astimezone(ZoneInfo(self.time_zone)))
        except CroniterError as error:
            raise ScheduleError(f"schedule: {self.expression!r}: {error}") from None

    def next_after(self, instant: datetime) -> datetime:
        """The first due time strictly after ``instant`` (UTC)."""
        return self._iterator(instant).get_next(datetime).astimezone(UTC)

    def latest_until(self, instant: datetime) -> datetime:
        """The last due time at or before ``instant`` (UTC)."""
        after = instant + timedelta(microseconds=1)  # get_prev is strictly before its start
        return self._iterator(after).get_prev(datetime).astimezone(UTC)


@dataclass(frozen=True)
class Due:
    """What to do with a schedule at ``now``, given the latest due time already handled."""

    run: datetime | None  # the due time to run now, if any
    skipped: tuple[datetime, ...]  # missed due times not run, oldest first, at most MISSED_COUNTED
    more_skipped: bool  # more due times were missed than ``skipped`` lists
    handled: datetime  # the new status.lastRun: the latest due time handled (``last`` if none)
    next_run: datetime  # the next due time after now


def due(schedule: Schedule, last: datetime, now: datetime, deadline_seconds: float) -> Due:
    """The due times in (last, now]: the latest runs when at most ``deadline_seconds`` late,
    every other one is skipped. ``last`` is status.lastRun, or the Trigger's creation time."""
    next_run = schedule.next_after(now)
    latest = schedule.latest_until(now)
    if latest <= last:
        return Due(None, (), False, last, next_run)
    missed: list[datetime] = []
    cursor = schedule.next_after(last)
    while cursor < latest and len(missed) <= MISSED_COUNTED:
        missed.append(cursor)
        cursor = schedule.next_after(cursor)
    run: datetime | None = latest
    if (now - latest).total_seconds() > deadline_seconds:
        run = None
        missed.append(latest)
    more = len(missed) > MISSED_COUNTED
    return Due(run, tuple(missed[:MISSED_COUNTED]), more, latest, next_run)

"""Cron schedules in a time zone: next and latest due times, and what a restart missed."""

from datetime import datetime, timedelta, timezone

import pytest

from kaos.triggers.schedule import MISSED_COUNTED, Schedule, ScheduleError, due

UTC = timezone.utc


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def test_next_and_latest_due_times_in_utc():
    nightly = Schedule("0 2 * * *")
    assert nightly.next_after(at("2026-03-01T01:59:59")) == at("2026-03-01T02:00:00")
    assert nightly.next_after(at("2026-03-01T02:00:00")) == at("2026-03-02T02:00:00")  # strictly after
    assert nightly.latest_until(at("2026-03-01T02:00:00")) == at("2026-03-01T02:00:00")  # at or before
    assert nightly.latest_until(at("2026-03-01T01:00:00")) == at("2026-02-28T02:00:00")


def test_a_time_zone_moves_the_due_time_and_follows_daylight_saving():
    paris = Schedule("0 2 * * *", "Europe/Paris")
    assert paris.next_after(at("2026-01-15T00:00:00")) == at("2026-01-15T01:00:00")  # UTC+1 in winter
    assert paris.next_after(at("2026-07-15T00:00:00")) == at("2026-07-15T00:00:00") + timedelta(days=1)
    assert paris.next_after(at("2026-07-14T23:00:00")) == at("2026-07-15T00:00:00")  # UTC+2 in summer
    nine = Schedule("0 9 * * *", "America/New_York")
    before, after = nine.next_after(at("2026-03-07T12:00:00")), nine.next_after(at("2026-03-08T12:00:00"))
    assert (before.hour, after.hour) == (14, 13)  # EST, then EDT from 8 March 2026


def test_a_seconds_field_and_macros():
    assert Schedule("* * * * * */5").next_after(at("2026-03-01T00:00:01")) == at("2026-03-01T00:00:05")
    assert Schedule("@hourly").next_after(at("2026-03-01T00:30:00")) == at("2026-03-01T01:00:00")


@pytest.mark.parametrize("expression, zone, field", [
    ("every night", "UTC", "schedule"), ("61 * * * *", "UTC", "schedule"), ("* * *", "UTC", "schedule"),
    ("", "UTC", "schedule"), ("0 2 * * *", "Mars/Olympus", "timeZone"), ("0 2 * * *", "../etc", "timeZone"),
])
def test_a_bad_schedule_or_zone_is_refused_with_its_field(expression, zone, field):
    with pytest.raises(ScheduleError, match=f"^{field}: "):
        Schedule(expression, zone)


def test_nothing_due_before_the_next_time():
    found = due(Schedule("0 2 * * *"), at("2026-03-01T02:00:00"), at("2026-03-01T03:00:00"), 3600)
    assert (found.run, found.skipped, found.handled) == (None, (), at("2026-03-01T02:00:00"))
    assert found.next_run == at("2026-03-02T02:00:00")


def test_a_due_time_runs_once_then_is_handled():
    schedule = Schedule("0 2 * * *")
    first = due(schedule, at("2026-03-01T00:00:00"), at("2026-03-01T02:00:00.300"), 3600)
    assert first.run == at("2026-03-01T02:00:00") and first.skipped == () and first.handled == first.run
    again = due(schedule, first.handled, at("2026-03-01T02:00:05"), 3600)
    assert again.run is None  # lastRun persisted: never fired twice


def test_after_a_restart_the_latest_missed_time_runs_within_the_deadline():
    schedule = Schedule("0 * * * *")
    found = due(schedule, at("2026-03-01T01:00:00"), at("2026-03-01T04:20:00"), 3600)
    assert found.run == at("2026-03-01T04:00:00")
    assert found.skipped == (at("2026-03-01T02:00:00"), at("2026-03-01T03:00:00"))
    assert found.handled == at("2026-03-01T04:00:00") and not found.more_skipped


def test_a_missed_time_older_than_the_deadline_is_skipped_not_run():
    found = due(Schedule("0 2 * * *"), at("2026-03-01T02:00:00"), at("2026-03-02T05:00:00"), 3600)
    assert found.run is None
    assert found.skipped == (at("2026-03-02T02:00:00"),)
    assert found.handled == at("2026-03-02T02:00:00")


def test_a_long_outage_counts_missed_times_up_to_a_bound():
    found = due(Schedule("* * * * *"), at("2026-03-01T00:00:00"), at("2026-03-02T00:00:30"), 60)
    assert found.run == at("2026-03-02T00:00:00")
    assert len(found.skipped) == MISSED_COUNTED and found.more_skipped
    assert found.skipped[0] == at("2026-03-01T00:01:00")

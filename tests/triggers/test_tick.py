"""One look at a schedule: what runs, what is skipped, and the lastRun/nextRun to persist."""

from datetime import timedelta

from kaos.triggers.spec import trigger_spec
from kaos.triggers.tick import schedule_tick
from tests.triggers.builders import at, trigger

CREATED = at("2026-03-01T00:00:00")


def test_a_new_trigger_runs_at_its_first_due_time_not_before_it_existed():
    spec = trigger_spec(trigger(schedule="0 * * * *"))
    early = schedule_tick(spec, None, at("2026-03-01T00:30:00"), at("2026-03-01T00:59:59"))
    assert early.run is None and early.skipped is None and early.next_run == at("2026-03-01T01:00:00")
    due = schedule_tick(spec, None, CREATED, at("2026-03-01T01:00:00.2"))
    assert due.run == at("2026-03-01T01:00:00") and due.last_run == due.run
    assert due.next_run == at("2026-03-01T02:00:00")


def test_a_persisted_last_run_is_never_fired_again():
    spec = trigger_spec(trigger(schedule="0 * * * *"))
    tick = schedule_tick(spec, at("2026-03-01T01:00:00"), CREATED, at("2026-03-01T01:00:30"))
    assert tick.run is None and tick.last_run == at("2026-03-01T01:00:00")


def test_a_restart_catches_up_with_one_run_and_says_what_it_skipped():
    spec = trigger_spec(trigger(schedule="0 * * * *"))
    tick = schedule_tick(spec, at("2026-03-01T01:00:00"), CREATED, at("2026-03-01T04:10:00"))
    assert tick.run == at("2026-03-01T04:00:00")
    assert tick.skipped == ("skipped: 2 due time(s) missed while no control plane was running, or it fell "
                            "behind (2026-03-01T02:00:00Z to 2026-03-01T03:00:00Z); the run due at "
                            "2026-03-01T04:00:00Z catches up for them")


def test_beyond_the_starting_deadline_nothing_runs_and_the_skip_says_why():
    spec = trigger_spec(trigger(schedule="0 2 * * *", startingDeadlineSeconds=600))
    tick = schedule_tick(spec, at("2026-03-01T02:00:00"), CREATED, at("2026-03-02T02:11:00"))
    assert tick.run is None and tick.last_run == at("2026-03-02T02:00:00")
    assert tick.skipped.endswith("older than startingDeadlineSeconds (600 s)")
    assert tick.skipped_at == at("2026-03-02T02:00:00")
    within = schedule_tick(spec, at("2026-03-01T02:00:00"), CREATED, at("2026-03-02T02:09:59"))
    assert within.run == at("2026-03-02T02:00:00") and within.skipped is None


def test_due_times_pass_without_running_while_suspended():
    spec = trigger_spec(trigger(schedule="0 * * * *", suspend=True))
    tick = schedule_tick(spec, at("2026-03-01T01:00:00"), CREATED, at("2026-03-01T05:00:00") + timedelta(seconds=1))
    assert (tick.run, tick.skipped) == (None, None)
    assert tick.last_run == at("2026-03-01T05:00:00")  # resumed later, it does not run them

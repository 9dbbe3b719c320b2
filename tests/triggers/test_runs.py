"""RunBook: concurrencyPolicy, replayed deliveries, restarts and the bounded history."""

from datetime import timedelta

from kaos.triggers.runs import (
    ALLOW,
    FAILED,
    FORBID,
    REPLACE,
    SCHEDULE,
    SKIPPED,
    SUCCEEDED,
    SUMMARY_MAX,
    WEBHOOK,
    RunBook,
)
from tests.triggers.builders import at, ids

NOW = at("2026-03-01T02:00:00")


def book(**kwargs) -> RunBook:
    return RunBook("nightly", new_id=ids(), **kwargs)


def test_a_run_is_active_until_it_finishes_then_in_the_history():
    runs = book()
    start = runs.start(SCHEDULE, NOW, FORBID, "new", scheduled=NOW)
    assert start.run.run_id == "r1" and start.run.session_id == "trigger-nightly-r1" and start.replace == ()
    assert runs.status()["active"] == [{"runId": "r1", "sessionId": "trigger-nightly-r1",
                                        "startTime": "2026-03-01T02:00:00Z", "source": "schedule"}]
    entry = runs.finish("r1", SUCCEEDED, NOW + timedelta(seconds=3), "All good. " * 50, tokens=120)
    assert entry == {"runId": "r1", "source": "schedule", "outcome": SUCCEEDED, "sessionId": "trigger-nightly-r1",
                     "startTime": "2026-03-01T02:00:00Z", "endTime": "2026-03-01T02:00:03Z", "tokens": 120,
                     "summary": ("All good. " * 50)[:SUMMARY_MAX], "scheduledTime": "2026-03-01T02:00:00Z"}
    assert runs.status() == {"active": [], "history": [entry]}


def test_a_fixed_session_is_shared_by_every_run():
    runs = book()
    assert runs.start(SCHEDULE, NOW, ALLOW, "ops-log").run.session_id == "ops-log"
    assert runs.start(SCHEDULE, NOW, ALLOW, "ops-log").run.session_id == "ops-log"


def test_forbid_skips_a_run_while_one_is_in_progress():
    runs = book()
    runs.start(SCHEDULE, NOW, FORBID, "new")
    second = runs.start(SCHEDULE, NOW + timedelta(minutes=1), FORBID, "new")
    assert second.run is None and second.skipped["outcome"] == SKIPPED
    assert "run r1 is in progress" in second.skipped["summary"]
    assert [e["outcome"] for e in runs.history] == [SKIPPED]
    assert list(runs.active) == ["r1"]


def test_allow_runs_both_and_replace_names_the_runs_to_stop():
    runs = book()
    runs.start(SCHEDULE, NOW, ALLOW, "new")
    assert runs.start(SCHEDULE, NOW, ALLOW, "new").replace == ()
    third = runs.start(SCHEDULE, NOW, REPLACE, "new")
    assert third.replace == ("r1", "r2") and third.run.run_id == "r3"
    assert set(runs.active) == {"r1", "r2", "r3"}  # the caller stops r1 and r2 and finishes them


def test_a_delivery_runs_once_within_the_history_window():
    runs = book(history_limit=2)
    first = runs.start(WEBHOOK, NOW, ALLOW, "new", delivery_id="d-1")
    replay = runs.start(WEBHOOK, NOW, ALLOW, "new", delivery_id="d-1")
    assert replay.run is None and replay.original["runId"] == first.run.run_id  # while in progress
    runs.finish(first.run.run_id, SUCCEEDED, NOW)
    assert runs.start(WEBHOOK, NOW, ALLOW, "new", delivery_id="d-1").original["runId"] == "r1"  # after
    for delivery in ("d-2", "d-3"):
        runs.finish(runs.start(WEBHOOK, NOW, ALLOW, "new", delivery_id=delivery).run.run_id, SUCCEEDED, NOW)
    assert runs.start(WEBHOOK, NOW, ALLOW, "new", delivery_id="d-1").run is not None  # out of the window


def test_a_skipped_delivery_may_be_delivered_again():
    runs = book()
    runs.start(WEBHOOK, NOW, FORBID, "new", delivery_id="d-1")
    assert runs.start(WEBHOOK, NOW, FORBID, "new", delivery_id="d-2").skipped is not None
    runs.finish("r1", SUCCEEDED, NOW)
    assert runs.start(WEBHOOK, NOW, FORBID, "new", delivery_id="d-2").run is not None


def test_the_history_keeps_the_newest_entries_up_to_its_limit():
    runs = book(history_limit=3)
    for _ in range(7):
        runs.finish(runs.start(SCHEDULE, NOW, FORBID, "new").run.run_id, SUCCEEDED, NOW)
    assert [e["runId"] for e in runs.history] == ["r5", "r6", "r7"]
    runs.resize(2)
    assert [e["runId"] for e in runs.history] == ["r6", "r7"]


def test_runs_left_active_by_a_stopped_control_plane_end_failed_never_run_again():
    before = book()
    before.finish(before.start(SCHEDULE, NOW, FORBID, "new").run.run_id, SUCCEEDED, NOW)
    before.start(WEBHOOK, NOW, FORBID, "new", delivery_id="d-9")
    status = before.status()
    after = RunBook.from_status("nightly", status, 10, NOW + timedelta(minutes=5), new_id=ids())
    assert after.active == {}
    assert [(e["runId"], e["outcome"]) for e in after.history] == [("r1", SUCCEEDED), ("r2", FAILED)]
    assert after.history[-1]["summary"].startswith("interrupted")
    assert after.start(WEBHOOK, NOW, FORBID, "new", delivery_id="d-9").original["runId"] == "r2"


def test_an_abandoned_run_leaves_no_trace_and_skips_record_why():
    runs = book()
    runs.abandon(runs.start(SCHEDULE, NOW, FORBID, "new").run.run_id)
    assert runs.status() == {"active": [], "history": []}
    entry = runs.skip(SCHEDULE, NOW, "skipped: missed", scheduled=NOW)
    assert entry["outcome"] == SKIPPED and entry["summary"] == "skipped: missed" and entry["scheduledTime"]

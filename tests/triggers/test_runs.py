"""RunBook: concurrencyPolicy, replayed deliveries, restarts and the bounded history."""

from datetime import timedelta

from kaos.triggers.deliveries import MAX_REMEMBERED
from kaos.triggers.runs import (
    ALLOW,
    FAILED,
    FORBID,
    MANUAL,
    REPLACE,
    SCHEDULE,
    SKIPPED,
    SKIPS_KEPT,
    SUCCEEDED,
    SUMMARY_MAX,
    WEBHOOK,
    RunBook,
)
from kaos.triggers.signature import WINDOW_SECONDS
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


def test_a_delivery_runs_once_while_in_progress_and_in_the_history():
    runs = book(history_limit=2)
    first = runs.start(WEBHOOK, NOW, ALLOW, "new", delivery_id="d-1")
    replay = runs.start(WEBHOOK, NOW, ALLOW, "new", delivery_id="d-1")
    assert replay.run is None and replay.original["runId"] == first.run.run_id  # while in progress
    runs.finish(first.run.run_id, SUCCEEDED, NOW)
    later = NOW + timedelta(hours=1)  # a redelivery with a fresh timestamp, long after: the history has it
    assert runs.start(WEBHOOK, later, ALLOW, "new", delivery_id="d-1").original["runId"] == "r1"


def test_a_delivery_is_remembered_for_its_window_whatever_the_history_holds():
    runs = book(history_limit=1)
    signed = NOW - timedelta(seconds=100)
    first = runs.start(WEBHOOK, NOW, ALLOW, "new", delivery_id="d-1", signed_at=signed)
    runs.finish(first.run.run_id, SUCCEEDED, NOW)
    for delivery in ("d-2", "d-3"):  # push d-1's run out of the history
        runs.finish(runs.start(WEBHOOK, NOW, ALLOW, "new", delivery_id=delivery).run.run_id, SUCCEEDED, NOW)
    assert [e["deliveryId"] for e in runs.history] == ["d-3"]
    # A replay of the captured call is accepted until its timestamp leaves the window: it finds its run.
    last_moment = signed + timedelta(seconds=WINDOW_SECONDS)
    replay = runs.start(WEBHOOK, last_moment, ALLOW, "new", delivery_id="d-1", signed_at=signed)
    assert replay.run is None and replay.original == {"runId": "r1", "sessionId": "trigger-nightly-r1"}
    assert runs.status()["deliveries"][0] == {"deliveryId": "d-1", "runId": "r1", "sessionId": "trigger-nightly-r1",
                                              "expires": "2026-03-01T02:05:00Z"}  # NOW is later than signed
    # Past it, the call itself is refused as out of the window, and the id is forgotten.
    after = NOW + timedelta(seconds=WINDOW_SECONDS + 1)
    assert runs.start(WEBHOOK, after, ALLOW, "new", delivery_id="d-1").run is not None
    assert [d["deliveryId"] for d in runs.status()["deliveries"]] == ["d-1"]  # d-2, d-3 expired, d-1 again


def test_remembered_deliveries_survive_a_restart_of_the_control_plane():
    before = book(history_limit=1)
    before.finish(before.start(WEBHOOK, NOW, ALLOW, "new", delivery_id="d-1").run.run_id, SUCCEEDED, NOW)
    before.finish(before.start(WEBHOOK, NOW, ALLOW, "new", delivery_id="d-2").run.run_id, SUCCEEDED, NOW)
    soon = NOW + timedelta(seconds=60)
    after = RunBook.from_status("nightly", before.status(), 1, soon, new_id=ids())
    assert after.start(WEBHOOK, soon, ALLOW, "new", delivery_id="d-1").original["runId"] == "r1"
    expired = RunBook.from_status("nightly", before.status(), 1, NOW + timedelta(seconds=WINDOW_SECONDS + 1))
    assert "deliveries" not in expired.status()


def test_a_delivery_that_started_nothing_is_not_remembered():
    runs = book()
    runs.abandon(runs.start(WEBHOOK, NOW, ALLOW, "new", delivery_id="d-1").run.run_id)  # not recorded, not sent
    assert runs.status() == {"active": [], "history": []}
    assert runs.start(WEBHOOK, NOW, ALLOW, "new", delivery_id="d-1").run is not None


def test_allow_runs_at_most_max_concurrent_runs():
    runs = book(history_limit=3)
    for _ in range(2):
        assert runs.start(WEBHOOK, NOW, ALLOW, "new", max_concurrent=2).run is not None
    refused = runs.start(WEBHOOK, NOW, ALLOW, "new", delivery_id="d-3", max_concurrent=2)
    assert (refused.run, refused.skipped, refused.busy, refused.retry_after) == (
        None, None, "limits.maxConcurrentRuns (2) runs are in progress", 5)
    assert runs.history == [] and "deliveries" not in runs.status()  # a refused call leaves no trace
    assert len(runs.active) == 2
    for source in (SCHEDULE, MANUAL):  # nobody waits for the answer: Skipped, saying why
        skipped = runs.start(source, NOW, ALLOW, "new", max_concurrent=2)
        assert skipped.busy and skipped.skipped["summary"] == "skipped: limits.maxConcurrentRuns (2) runs are in progress"
    runs.finish("r1", SUCCEEDED, NOW)
    assert runs.start(WEBHOOK, NOW, ALLOW, "new", delivery_id="d-3", max_concurrent=2).run is not None


def test_past_the_deliveries_it_can_remember_a_trigger_refuses_new_ones_until_one_expires():
    runs = book()
    for number in range(MAX_REMEMBERED):
        started = runs.start(WEBHOOK, NOW + timedelta(seconds=number % 2), ALLOW, "new", delivery_id=f"d-{number}",
                             max_concurrent=1000)
        runs.finish(started.run.run_id, SUCCEEDED, NOW)
    full = runs.start(WEBHOOK, NOW, ALLOW, "new", delivery_id="one-more", max_concurrent=1000)
    assert full.run is None and full.busy.startswith(f"{MAX_REMEMBERED} deliveries") \
        and full.retry_after == WINDOW_SECONDS
    assert runs.start(WEBHOOK, NOW, ALLOW, "new", delivery_id="d-7").original is not None  # none forgotten
    expired = NOW + timedelta(seconds=WINDOW_SECONDS + 0.5)  # the first half expired
    assert runs.start(WEBHOOK, expired, ALLOW, "new", delivery_id="one-more", max_concurrent=1000).run is not None


def test_a_skipped_delivery_may_be_delivered_again():
    runs = book()
    runs.start(WEBHOOK, NOW, FORBID, "new", delivery_id="d-1")
    assert runs.start(WEBHOOK, NOW, FORBID, "new", delivery_id="d-2").skipped is not None
    runs.finish("r1", SUCCEEDED, NOW)
    assert runs.start(WEBHOOK, NOW, FORBID, "new", delivery_id="d-2").run is not None


def test_skips_never_push_runs_out_of_the_history():
    runs = book(history_limit=2)
    runs.finish(runs.start(WEBHOOK, NOW, FORBID, "new").run.run_id, SUCCEEDED, NOW)
    runs.start(WEBHOOK, NOW, FORBID, "new")  # r2, in progress
    for _ in range(20):
        assert runs.start(WEBHOOK, NOW, FORBID, "new").skipped is not None
    runs.skip(SCHEDULE, NOW, "skipped: missed")
    history = runs.status()["history"]
    assert [e["runId"] for e in history if e["outcome"] != SKIPPED] == ["r1"]
    assert len([e for e in history if e["outcome"] == SKIPPED]) == SKIPS_KEPT
    assert history[-1]["summary"] == "skipped: missed"  # the newest skips
    runs.finish("r2", SUCCEEDED, NOW)
    runs.finish(runs.start(WEBHOOK, NOW, FORBID, "new").run.run_id, SUCCEEDED, NOW)
    assert [e["runId"] for e in runs.history if e["outcome"] != SKIPPED] == ["r2", runs.history[-1]["runId"]]


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

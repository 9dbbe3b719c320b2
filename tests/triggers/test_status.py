"""The status a control plane writes for a Trigger."""

from kaos.triggers.runs import FORBID, SCHEDULE, SUCCEEDED, RunBook
from kaos.triggers.status import trigger_status
from tests.triggers.builders import at, ids, ready_agent, trigger, webhook_trigger

NOW = at("2026-03-01T02:00:00")


def conditions(status) -> dict:
    return {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]}


def test_a_ready_schedule_says_when_it_runs_next_with_its_runs():
    book = RunBook("nightly", new_id=ids())
    book.finish(book.start(SCHEDULE, NOW, FORBID, "new").run.run_id, SUCCEEDED, NOW, "done", 10)
    book.start(SCHEDULE, NOW, "Allow", "new")
    status = trigger_status(trigger(), problem=None, agent=ready_agent(), book=book,
                            last_run=NOW, next_run=at("2026-03-02T02:00:00"))
    assert status["phase"] == "Ready" and status["message"] == "next run at 2026-03-02T02:00:00Z" and status["ready"]
    assert status["lastRun"] == "2026-03-01T02:00:00Z" and status["nextRun"] == "2026-03-02T02:00:00Z"
    assert status["observedGeneration"] == 3
    assert conditions(status) == {"Ready": ("True", "Ready"), "AgentReady": ("True", "AgentReady")}
    assert [e["runId"] for e in status["history"]] == ["r1"] and [a["runId"] for a in status["active"]] == ["r2"]


def test_the_phase_says_what_stops_runs():
    book = RunBook("t")
    failed = trigger_status(trigger(), problem="schedule: 'x' is not a cron expression", agent=ready_agent(),
                            book=book)
    assert (failed["phase"], failed["message"]) == ("Failed", "schedule: 'x' is not a cron expression")
    suspended = trigger_status(trigger(suspend=True), problem=None, agent=ready_agent(), book=book,
                               next_run=NOW)
    assert suspended["phase"] == "Suspended" and "nextRun" not in suspended
    waiting = trigger_status(trigger(), problem=None, agent=ready_agent(False), book=book)
    assert waiting["phase"] == "Waiting" and waiting["ready"] is False
    assert waiting["message"] == "Agent reporter is not ready (Waiting: ModelAPI models is not ready)"
    assert conditions(waiting)["AgentReady"] == ("False", "AgentNotReady")
    missing = trigger_status(trigger(), problem=None, agent=None, book=book)
    assert (missing["phase"], missing["message"]) == ("Waiting", "Agent reporter does not exist")


def test_a_webhook_has_no_next_run_and_its_secret_is_nowhere():
    status = trigger_status(webhook_trigger(), problem=None, agent=ready_agent(), book=RunBook("on-ci"),
                            next_run=NOW)
    assert status["phase"] == "Ready" and status["message"] == "waiting for webhook calls"
    assert "nextRun" not in status and "lastRun" not in status
    assert "ci-hook" not in str(status) and "hmac" not in str(status)


def test_the_status_fits_the_crd_status_schema():
    from kaos.crds import validate
    from kaos.triggers.runs import WEBHOOK

    resource = webhook_trigger()
    book = RunBook("on-ci", new_id=ids())
    book.finish(book.start(WEBHOOK, NOW, "Allow", "new", delivery_id="d1").run.run_id, SUCCEEDED, NOW, "ok", 5)
    book.start(WEBHOOK, NOW, "Forbid", "new", delivery_id="d2")
    book.start(WEBHOOK, NOW, "Forbid", "new", delivery_id="d3")  # skipped
    book.skip("schedule", NOW, "skipped: missed", scheduled=NOW)
    status = trigger_status(resource, problem=None, agent=ready_agent(), book=book, last_run=NOW, next_run=NOW)
    conditions = [{**c, "lastTransitionTime": "2026-01-01T00:00:00Z"} for c in status["conditions"]]
    valid = validate({**resource, "status": {**status, "conditions": conditions}})["status"]
    assert valid["history"] and [d["deliveryId"] for d in valid["deliveries"]] == ["d1", "d2"]

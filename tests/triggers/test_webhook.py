"""Whether a webhook call starts a run, and what it answers."""

from kaos.triggers.runs import ALLOW, FORBID, WEBHOOK, RunBook
from kaos.triggers.signature import signature
from kaos.triggers.spec import trigger_spec
from kaos.triggers.webhook import MAX_BODY_BYTES, answer, refusal
from tests.triggers.builders import at, ids, trigger, webhook_trigger

SECRET = b"hook-key"
BODY = b'{"status": "failed"}'
GOOD = signature(SECRET, BODY)
NOW = at("2026-03-01T02:00:00")


def refused(spec=None, problem=None, secret=SECRET, body=BODY, sig=GOOD, agent=None):
    spec = trigger_spec(webhook_trigger()) if spec is None else spec
    found = refusal(spec, problem, secret, body, sig, agent)
    return (found.status, found.body["detail"]) if found else None


def test_a_signed_call_to_a_ready_trigger_may_start_a_run():
    assert refused() is None


def test_what_starts_nothing():
    assert refused(sig=None)[0] == 401
    assert refused(sig=signature(b"wrong", BODY))[0] == 401
    assert refused(secret=None)[0] == 503
    assert refused(body=b"x" * (MAX_BODY_BYTES + 1), sig=signature(SECRET, b"x" * (MAX_BODY_BYTES + 1)))[0] == 413
    assert refused(body=b"x" * MAX_BODY_BYTES, sig=signature(SECRET, b"x" * MAX_BODY_BYTES)) is None
    assert refused(spec=trigger_spec(webhook_trigger(suspend=True))) == (409, "trigger on-ci is suspended")
    assert refused(problem="secret ci-hook has no key hmac")[0] == 409
    assert refused(agent="Agent reporter is not ready") == (503, "Agent reporter is not ready")
    assert refused(spec=trigger_spec(trigger()))[0] == 404  # a schedule has no webhook
    assert refusal(None, None, None, BODY, GOOD, None).status == 404


def test_a_bad_signature_learns_nothing_about_the_trigger():
    assert refused(spec=trigger_spec(webhook_trigger(suspend=True)), sig="sha256=00")[0] == 401
    assert refused(problem="broken", sig=None)[0] == 401


def test_answers_a_new_run_a_replay_and_a_skip():
    book = RunBook("on-ci", new_id=ids())
    first = answer(book.start(WEBHOOK, NOW, ALLOW, "new", delivery_id="d1"))
    assert (first.status, first.body) == (202, {"runId": "r1", "sessionId": "trigger-on-ci-r1"})
    replay = answer(book.start(WEBHOOK, NOW, ALLOW, "new", delivery_id="d1"))
    assert (replay.status, replay.body) == (200, {"runId": "r1", "sessionId": "trigger-on-ci-r1", "replay": True})
    skipped = answer(book.start(WEBHOOK, NOW, FORBID, "new", delivery_id="d2"))
    assert skipped.status == 409 and "in progress" in skipped.body["detail"] and skipped.body["runId"] == "r2"

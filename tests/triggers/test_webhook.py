"""Whether a webhook call starts a run, and what it answers."""

from datetime import timedelta

from kaos.triggers.runs import ALLOW, FORBID, SCHEDULE, WEBHOOK, RunBook
from kaos.triggers.signature import WINDOW_SECONDS, signature, signed_headers
from kaos.triggers.webhook import MAX_BODY_BYTES, NOT_SIGNED, WebhookCall, answer, malformed, refusal
from tests.triggers.builders import at, ids

SECRET = b"hook-key"
BODY = b'{"status": "failed"}'
NOW = at("2026-03-01T02:00:00")
TS = str(int(NOW.timestamp()))


def call(body=BODY, secret=SECRET, **headers) -> WebhookCall:
    """A call signed now with ``secret``; ``headers`` replace any of the three."""
    signed = signed_headers(secret, body, delivery="d1", timestamp=int(TS))
    signed.update({name.replace("_", "-"): value for name, value in headers.items()})
    return WebhookCall.read(body, signed.get)


def refused(found: WebhookCall = None, secret=SECRET, suspended=False, problem=None, agent=None):
    found = call() if found is None else found
    answer = malformed(found, NOW) or refusal(found, secret, name="on-ci", suspended=suspended, problem=problem,
                                              agent_problem=agent)
    return (answer.status, answer.body["detail"]) if answer else None


def test_a_signed_call_to_a_ready_trigger_may_start_a_run():
    assert refused() is None


def test_what_starts_nothing():
    assert refused(call(**{"X-KAOS-Signature-256": signature(b"wrong", TS, "d1", BODY)}))[0] == 401
    assert refused(secret=None)[0] == 401
    big = b"x" * (MAX_BODY_BYTES + 1)
    assert refused(call(body=big))[0] == 413
    assert refused(call(body=b"x" * MAX_BODY_BYTES)) is None
    assert refused(suspended=True) == (409, "trigger on-ci is suspended")
    assert refused(problem="secret ci-hook has no key hmac")[0] == 409
    assert refused(agent="Agent reporter is not ready") == (503, "Agent reporter is not ready")


def test_the_timestamp_and_the_delivery_id_are_required_and_well_formed():
    assert refused(WebhookCall(BODY, signature(SECRET, TS, "d1", BODY), None, "d1"))[0] == 400
    assert refused(WebhookCall(BODY, signature(SECRET, TS, "d1", BODY), TS, None))[0] == 400
    assert refused(call(**{"X-KAOS-Timestamp": "2026-03-01T02:00:00Z"}))[0] == 400
    for delivery in ("", "a.b", "x" * 129, "d 1"):
        status, detail = refused(call(**{"X-KAOS-Delivery": delivery}))
        assert status == 400 and "X-KAOS-Delivery is required" in detail, delivery


def test_a_call_outside_the_window_is_refused_either_side():
    for offset in (-WINDOW_SECONDS, WINDOW_SECONDS):
        stamp = str(int(TS) + offset)
        assert refused(call(**{"X-KAOS-Timestamp": stamp,
                               "X-KAOS-Signature-256": signature(SECRET, stamp, "d1", BODY)})) is None
    for offset, side in ((-WINDOW_SECONDS - 1, "behind"), (WINDOW_SECONDS + 1, "ahead of")):
        stamp = str(int(TS) + offset)
        status, detail = refused(call(**{"X-KAOS-Timestamp": stamp,
                                         "X-KAOS-Signature-256": signature(SECRET, stamp, "d1", BODY)}))
        assert status == 401 and f"is {WINDOW_SECONDS + 1} s {side} this server's clock" in detail


def test_a_captured_call_cannot_be_sent_again_as_another_delivery():
    assert refused(call(**{"X-KAOS-Delivery": "d2"})) == (401, NOT_SIGNED.body["detail"])
    stamp = str(int(TS) + 60)  # a fresh timestamp on the captured signature
    assert refused(call(**{"X-KAOS-Timestamp": stamp})) == (401, NOT_SIGNED.body["detail"])


def test_a_bad_signature_learns_nothing_about_the_trigger():
    """An unknown Trigger, one without a webhook or a key (secret None) and a wrong or missing
    signature get one answer, whatever the Trigger's state."""
    wrong = call(**{"X-KAOS-Signature-256": "sha256=00"})
    answers = {refused(wrong), refused(wrong, suspended=True), refused(wrong, problem="broken"),
               refused(secret=None), refused(WebhookCall(BODY, None, TS, "d1"), secret=None),
               refused(WebhookCall(BODY, None, TS, "d1"))}
    assert answers == {(401, NOT_SIGNED.body["detail"])}


def test_answers_a_new_run_a_replay_a_skip_and_a_call_over_the_cap():
    book = RunBook("on-ci", new_id=ids())
    first = answer(book.start(WEBHOOK, NOW, ALLOW, "new", delivery_id="d1"))
    assert (first.status, first.body) == (202, {"runId": "r1", "sessionId": "trigger-on-ci-r1"})
    replay = answer(book.start(WEBHOOK, NOW, ALLOW, "new", delivery_id="d1"))
    assert (replay.status, replay.body) == (200, {"runId": "r1", "sessionId": "trigger-on-ci-r1", "replay": True})
    skipped = answer(book.start(WEBHOOK, NOW, FORBID, "new", delivery_id="d2"))
    assert skipped.status == 409 and "in progress" in skipped.body["detail"] and skipped.body["runId"] == "r2"
    busy = answer(book.start(WEBHOOK, NOW, ALLOW, "new", delivery_id="d3", max_concurrent=1))
    assert (busy.status, busy.headers) == (429, {"Retry-After": "5"})
    assert busy.body == {"detail": "limits.maxConcurrentRuns (1) runs are in progress: try again later"}
    due = answer(book.start(SCHEDULE, NOW + timedelta(seconds=1), ALLOW, "new", max_concurrent=1))
    assert due.status == 429 and due.body["runId"]  # recorded as Skipped

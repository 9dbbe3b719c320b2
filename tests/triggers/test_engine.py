"""TriggerEngine with an in-memory host and a real agent process: schedules, webhooks, manual
runs, concurrency, restarts and deletion."""

from __future__ import annotations

import asyncio
import copy
from datetime import datetime, timedelta, timezone

import pytest

from kaos.trigger_runner.engine import TriggerEngine
from kaos.triggers.runs import FAILED, SKIPPED, SUCCEEDED, timestamp
from kaos.triggers.schedule import Schedule
from kaos.triggers.signature import signed_headers
from kaos.triggers.webhook import NOT_SIGNED, WebhookCall
from tests.runtime.conftest import agent_env, events
from tests.support.polling import eventually
from tests.triggers import builders
from tests.triggers.builders import webhook_trigger

SECRET = b"hook-key"
EVERY_SECOND = "* * * * * *"


def signed(body: bytes, secret: bytes = SECRET, **headers) -> WebhookCall:
    """A webhook call signed now (``headers``: delivery, timestamp)."""
    return WebhookCall.read(body, signed_headers(secret, body, **headers).get)


def trigger(name: str, **spec) -> dict:
    """A Trigger created now (a schedule has missed nothing yet)."""
    return builders.trigger(name, created=timestamp(datetime.now(timezone.utc)), **spec)


class Host:
    """The control plane as the engine sees it: agents, secrets and the written statuses."""

    def __init__(self, agent_url: str) -> None:
        self.agents = {("team", "reporter"): {"status": {"ready": True, "phase": "Ready", "endpoint": agent_url}}}
        self.secrets = {("team", "ci-hook", "hmac"): SECRET}
        self.written: dict[tuple[str, str], list[dict]] = {}
        self.refuse = False

    def agent(self, namespace, name):
        return self.agents.get((namespace, name))

    async def secret(self, namespace, name, key):
        return self.secrets.get((namespace, name, key))

    async def persist(self, namespace, name, status):
        if self.refuse:
            return False
        self.written.setdefault((namespace, name), []).append(copy.deepcopy(status))
        return True

    def last(self, name: str) -> dict:
        return (self.written.get(("team", name)) or [{}])[-1]


@pytest.fixture(scope="module")
def agent(start, mock_model):
    return start("agent", "reporter", agent_env("reporter", mock_model))


@pytest.fixture
async def engine_and_host(agent, mock_model):
    mock_model.reset()
    host = Host(agent.url)
    sent = []
    engine = TriggerEngine(host, on_run=lambda ns, name, run: sent.append((name, run, copy.deepcopy(host.last(name)))))
    engine.sent = sent
    yield engine, host
    await engine.close()


def finished(host: Host, name: str, count: int = 1) -> list[dict]:
    """The runs that ended (not skipped) in the last status written, once there are ``count``."""
    ended = [e for e in host.last(name).get("history") or [] if e["outcome"] != SKIPPED]
    return ended if len(ended) >= count else []


async def test_a_schedule_fires_after_persisting_its_due_time(engine_and_host, agent):
    engine, host = engine_and_host
    engine.apply(trigger("ticker", schedule=EVERY_SECOND, message="tick"))
    await eventually(lambda: finished(host, "ticker"), 10, what="a scheduled run")
    name, run, status_when_sent = engine.sent[0]
    assert run.source == "schedule" and run.scheduled is not None
    assert status_when_sent["lastRun"] == timestamp(run.scheduled)  # persisted before the message went out
    assert [a["runId"] for a in status_when_sent["active"]] == [run.run_id]
    assert (run.start - run.scheduled).total_seconds() < 1
    entry = finished(host, "ticker")[0]
    assert entry["outcome"] == SUCCEEDED and entry["summary"] == "echo: tick"
    assert [e["content"] for e in events(agent, session_id=entry["sessionId"], event_type="user_message")["events"]] \
        == ["tick"]
    assert host.last("ticker")["phase"] == "Ready" and host.last("ticker")["nextRun"]


async def test_forbid_skips_a_due_run_while_one_is_in_progress(engine_and_host, mock_model):
    engine, host = engine_and_host
    mock_model.script({"content": "slow", "gate": "forbid"})
    engine.apply(trigger("busy", schedule=EVERY_SECOND, concurrencyPolicy="Forbid"))
    history = await eventually(lambda: [e for e in host.last("busy").get("history") or []
                                        if e["outcome"] == SKIPPED], 10, what="a skipped run")
    assert "concurrencyPolicy Forbid" in history[0]["summary"]
    assert len(host.last("busy")["active"]) == 1
    mock_model.release("forbid")
    await eventually(lambda: finished(host, "busy"), 10, what="the slow run ending")


async def test_replace_stops_the_run_in_progress(engine_and_host, mock_model):
    engine, host = engine_and_host
    mock_model.script({"content": "slow", "gate": "replace"})
    engine.apply(trigger("fresh", webhook=None, schedule="0 0 1 1 *", concurrencyPolicy="Replace"))
    first = await engine.fire("team", "fresh")
    await eventually(lambda: len(engine.sent) == 1, 10, what="the first run sent")
    second = await engine.fire("team", "fresh")
    assert (first.status, second.status) == (202, 202)
    history = await eventually(lambda: finished(host, "fresh", 2), 30, what="both runs ended")
    outcomes = {e["runId"]: (e["outcome"], e["summary"]) for e in history}
    assert outcomes[first.body["runId"]] == (FAILED, f"replaced by run {second.body['runId']} "
                                                     "(concurrencyPolicy Replace)")
    assert outcomes[second.body["runId"]][0] == SUCCEEDED
    mock_model.release("replace")


async def test_the_webhook_checks_the_signature_renders_the_body_and_runs_a_delivery_once(engine_and_host, agent):
    engine, host = engine_and_host
    engine.apply(webhook_trigger(concurrencyPolicy="Allow"))
    body = b'{"status": "build 7 failed"}'
    first = signed(body, delivery="d1")
    assert await engine.webhook("team", "on-ci", WebhookCall(body, "sha256=00", first.timestamp, "d1")) == NOT_SIGNED
    assert await engine.webhook("team", "on-ci", WebhookCall(body, None, first.timestamp, "d1")) == NOT_SIGNED
    accepted = await engine.webhook("team", "on-ci", first)
    assert accepted.status == 202 and set(accepted.body) == {"runId", "sessionId"}
    replay = await engine.webhook("team", "on-ci", first)
    assert replay.status == 200 and replay.body["runId"] == accepted.body["runId"]
    redelivered = await engine.webhook("team", "on-ci", signed(body, delivery="d1"))  # the sender's, re-signed
    assert redelivered.status == 200 and redelivered.body["runId"] == accepted.body["runId"]
    captured = WebhookCall(body, first.signature, first.timestamp, "d2")  # another delivery id: not signed
    assert await engine.webhook("team", "on-ci", captured) == NOT_SIGNED
    await eventually(lambda: finished(host, "on-ci"), 10, what="the webhook run")
    found = events(agent, session_id=accepted.body["sessionId"], event_type="user_message")["events"]
    assert [e["content"] for e in found] == ["CI says: build 7 failed"]
    assert len(engine.sent) == 1  # the replays ran nothing
    assert str(SECRET) not in str(host.written) and SECRET.decode() not in str(host.written)


async def test_suspended_and_missing_secret_and_unknown(engine_and_host):
    engine, host = engine_and_host
    body = b"{}"
    engine.apply(webhook_trigger("paused", suspend=True))
    assert (await engine.webhook("team", "paused", signed(body))).status == 409
    assert (await engine.webhook("team", "paused", signed(body, b"bad"))) == NOT_SIGNED

    async def unreadable(namespace, name, key):
        raise ConnectionError("the API server does not answer")

    host.secret = unreadable
    assert (await engine.webhook("team", "paused", signed(body))).status == 503
    assert engine.sent == []


async def test_unknown_triggers_missing_keys_and_bad_signatures_get_one_answer(engine_and_host):
    """Nothing tells a caller without the key whether the Trigger exists, has a webhook or a key."""
    engine, host = engine_and_host
    body = b"{}"
    engine.apply(webhook_trigger("guarded"))
    engine.apply(trigger("keyless", schedule=None, webhook={"secretRef": {"name": "ci-hook", "key": "absent"}}))
    engine.apply(trigger("scheduled", schedule="0 0 1 1 *"))
    answers = [await engine.webhook("team", name, signed(body, key))
               for name, key in (("nobody", SECRET), ("scheduled", SECRET), ("keyless", SECRET), ("guarded", b"bad"))]
    assert answers == [NOT_SIGNED] * 4
    assert NOT_SIGNED.status == 401 and "no webhook here" in NOT_SIGNED.body["detail"]
    assert engine.sent == [] and "guarded" not in str(answers)


async def test_allow_runs_at_most_max_concurrent_runs_and_refuses_the_rest(engine_and_host, mock_model):
    engine, host = engine_and_host
    mock_model.script({"content": "slow", "gate": "cap"}, {"content": "slow", "gate": "cap"})
    engine.apply(webhook_trigger("capped", concurrencyPolicy="Allow", limits={"maxConcurrentRuns": 2}))
    try:
        answers = [await engine.webhook("team", "capped", signed(f'{{"n": {n}}}'.encode())) for n in range(6)]
        assert [a.status for a in answers] == [202, 202, 429, 429, 429, 429]
        assert answers[2].headers == {"Retry-After": "5"}
        assert answers[2].body["detail"] == "limits.maxConcurrentRuns (2) runs are in progress: try again later"
        assert len(host.last("capped")["active"]) == 2 and host.last("capped")["history"] == []
    finally:
        mock_model.release("cap")
    await eventually(lambda: finished(host, "capped", 2), 15, what="the two runs ended")
    assert len(engine.sent) == 2 and len(host.last("capped")["history"]) == 2  # the refused calls left no trace
    assert (await engine.webhook("team", "capped", signed(b"{}"))).status == 202  # room again


async def test_runs_send_the_credential_of_their_secret_and_fail_saying_why_without_it(start, mock_model):
    mock_model.reset()
    guarded = start("agent", "guarded-engine", agent_env("guarded-engine", mock_model, AUTH_API_KEYS="run-key"))
    host = Host(guarded.url)
    host.secrets[("team", "reporter-key", "token")] = b"run-key\n"  # a Secret's trailing line break is not sent
    host.secrets[("team", "reporter-keys", "all")] = b"run-key,other-key"
    engine = TriggerEngine(host)
    try:
        for name, ref in (("keyed", {"name": "reporter-key", "key": "token"}),
                          ("unkeyed", None),
                          ("missing", {"name": "reporter-key", "key": "absent"}),
                          ("listed", {"name": "reporter-keys", "key": "all"})):
            engine.apply(trigger(name, schedule="0 0 1 1 *", credentials=ref and {"secretKeyRef": ref}))
            assert (await engine.fire("team", name)).status == 202
        runs = {name: (await eventually(lambda: finished(host, name), 15, what=f"the run of {name}"))[0]
                for name in ("keyed", "unkeyed", "missing", "listed")}
    finally:
        await engine.close()
    assert (runs["keyed"]["outcome"], runs["keyed"]["summary"]) == (SUCCEEDED, "echo: Write the nightly report.")
    assert runs["unkeyed"]["outcome"] == FAILED
    assert runs["unkeyed"]["summary"].startswith("the agent requires authentication (401): set spec.credentials")
    assert runs["missing"]["summary"] == ("spec.credentials.secretKeyRef (Secret reporter-key, key absent): the Secret "
                                          "or the key does not exist, or it is empty")
    assert runs["listed"]["summary"].endswith("the value is not one bearer token (one key, no spaces, commas or "
                                              "line breaks)")
    assert "run-key" not in str(host.written)


async def test_a_run_now_request_runs_once_across_a_restart(engine_and_host, agent):
    engine, host = engine_and_host
    engine.apply(trigger("on-demand", schedule="0 0 1 1 *"))
    assert (await engine.run_now("team", "on-demand", None)) is None
    host.refuse = True  # not recorded: not run, and tried again
    assert (await engine.run_now("team", "on-demand", "1")).status == 503
    host.refuse = False
    assert (await engine.run_now("team", "on-demand", "1")).status == 202
    assert (await engine.run_now("team", "on-demand", "1")) is None
    await eventually(lambda: finished(host, "on-demand"), 10, what="the requested run")
    written = host.last("on-demand")
    assert written["runNow"] == "1" and written["history"][0]["source"] == "manual"

    restarted = TriggerEngine(host)
    try:
        restarted.apply({**trigger("on-demand", schedule="0 0 1 1 *"), "status": written})
        assert (await restarted.run_now("team", "on-demand", "1")) is None  # handled before the restart
        assert (await restarted.run_now("team", "on-demand", "2")).status == 202
        assert restarted.status("team", "on-demand")["runNow"] == "2"
    finally:
        await restarted.close()
    assert len(engine.sent) == 1


async def test_a_run_that_cannot_be_recorded_is_not_sent(engine_and_host):
    engine, host = engine_and_host
    engine.apply(trigger("unrecorded", schedule="0 0 1 1 *"))
    host.refuse = True
    assert (await engine.fire("team", "unrecorded")).status == 503
    assert engine.sent == [] and engine.status("team", "unrecorded")["active"] == []


async def test_the_history_stays_bounded(engine_and_host):
    engine, host = engine_and_host
    engine.apply(trigger("bounded", schedule="0 0 1 1 *", historyLimit=2, concurrencyPolicy="Allow"))
    for _ in range(4):
        assert (await engine.fire("team", "bounded")).status == 202
    await eventually(lambda: len(engine.sent) == 4 and not engine.status("team", "bounded")["active"], 15,
                     what="four runs ended")
    assert len(host.last("bounded")["history"]) == 2


async def test_deleting_a_trigger_stops_its_schedule_and_its_runs(engine_and_host, mock_model):
    engine, host = engine_and_host
    mock_model.script({"content": "never", "gate": "deleted"})
    engine.apply(trigger("doomed", schedule=EVERY_SECOND, concurrencyPolicy="Allow"))
    await eventually(lambda: engine.sent, 10, what="a run sent")
    state = engine.triggers[("team", "doomed")]
    engine.delete("team", "doomed")
    await asyncio.gather(state.schedule, *state.runs.values(), return_exceptions=True)
    assert state.schedule.cancelled() and all(task.done() for task in state.runs.values())
    assert engine.status("team", "doomed") is None
    mock_model.release("deleted")


async def test_a_restart_neither_fires_a_handled_due_time_again_nor_loses_a_missed_one(agent, mock_model):
    mock_model.reset()
    every_minute = Schedule("* * * * *")
    upcoming = every_minute.next_after(datetime.now(timezone.utc))
    if (upcoming - datetime.now(timezone.utc)).total_seconds() < 5:  # the test must not span a due time
        await eventually(lambda: datetime.now(timezone.utc) >= upcoming, 10, what="the next minute")
    latest = every_minute.latest_until(datetime.now(timezone.utc))
    host = Host(agent.url)
    sent = []
    engine = TriggerEngine(host, on_run=lambda ns, name, run: sent.append((name, run)))
    try:
        handled = trigger("handled", schedule="* * * * *")
        handled["status"] = {"lastRun": timestamp(latest),
                             "active": [{"runId": "old", "sessionId": "s", "startTime": timestamp(latest),
                                         "source": "schedule"}]}
        missed = trigger("missed", schedule="* * * * *")
        missed["status"] = {"lastRun": timestamp(latest - timedelta(minutes=1))}
        engine.apply(handled)
        engine.apply(missed)
        await eventually(lambda: finished(host, "missed"), 10, what="the missed due time run")
        assert [(name, run.scheduled) for name, run in sent if run.scheduled == latest] == [("missed", latest)]
        state = engine.triggers[("team", "handled")]
        await eventually(lambda: state.next_run is not None, 5, what="the handled trigger's first tick")
        assert state.last_run >= latest and not any(name == "handled" and run.scheduled == latest
                                                    for name, run in sent)
        interrupted = engine.status("team", "handled")["history"][0]
        assert (interrupted["runId"], interrupted["outcome"]) == ("old", FAILED)
        assert interrupted["summary"].startswith("interrupted")
    finally:
        await engine.close()

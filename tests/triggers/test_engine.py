"""TriggerEngine with an in-memory host and a real agent process: schedules, webhooks, manual
runs, concurrency, restarts, deletion, a schedule that fails. Schedules run on a ManualClock:
no test waits for real cron seconds."""

from __future__ import annotations

import asyncio
import copy
from datetime import datetime, timedelta, timezone

import pytest

from kaos.api import TRIGGER
from kaos.reconcile import Ref
from kaos.trigger_runner.engine import RESTART_BASE_SECONDS, TriggerEngine
from kaos.triggers.runs import FAILED, SKIPPED, SUCCEEDED, timestamp
from kaos.triggers.signature import signed_headers
from kaos.triggers.webhook import NOT_SIGNED, WebhookCall
from tests.runtime.conftest import agent_env, events
from tests.support.polling import eventually
from tests.triggers import builders
from tests.triggers.builders import at, webhook_trigger
from tests.triggers.clock import ManualClock

SECRET = b"hook-key"
EVERY_SECOND = "* * * * * *"


def signed(body: bytes, secret: bytes = SECRET, **headers) -> WebhookCall:
    """A webhook call signed now (``headers``: delivery, timestamp)."""
    return WebhookCall.read(body, signed_headers(secret, body, **headers).get)


def trigger(name: str, **spec) -> dict:
    """A Trigger created now (a schedule has missed nothing yet)."""
    return builders.trigger(name, created=timestamp(datetime.now(timezone.utc)), **spec)


def ref(name: str) -> Ref:
    return Ref(TRIGGER, "team", name)


# The manual clock's start: a second before the builders' nightly due time (0 2 * * *).
BEFORE_TWO = at("2026-03-02T01:59:59")


def on_clock(name: str, **spec) -> dict:
    """A Trigger created at the manual clock's start (a schedule has missed nothing yet)."""
    return builders.trigger(name, created=timestamp(BEFORE_TWO), **spec)


async def one_second(engine: TriggerEngine) -> None:
    """Once the schedule waits for the clock, a second passes (an every-second schedule is due)."""
    await sleeping(engine.clock)
    engine.clock.advance(1)


async def sleeping(clock: ManualClock, count: int = 1) -> None:
    """Until ``count`` schedules wait for the clock (each has looked at its due times)."""
    await eventually(lambda: clock.sleeping >= count, 10, what=f"{count} schedule(s) waiting for the clock")


class Host:
    """The control plane as the engine sees it: agents, secrets and the written statuses."""

    def __init__(self, agent_url: str) -> None:
        self.agents = {("team", "reporter"): {"status": {"ready": True, "phase": "Ready", "endpoint": agent_url}}}
        self.secrets = {("team", "ci-hook", "hmac"): SECRET}
        self.written: dict[tuple[str, str], list[dict]] = {}
        self.refuse = False

    def agent(self, ref):
        return self.agents.get((ref.namespace, ref.name))

    async def secret(self, namespace, name, key):
        return self.secrets.get((namespace, name, key))

    async def persist(self, ref, status):
        if self.refuse:
            return False
        self.written.setdefault((ref.namespace, ref.name), []).append(copy.deepcopy(status))
        return True

    def last(self, name: str) -> dict:
        return (self.written.get(("team", name)) or [{}])[-1]


@pytest.fixture(scope="module")
def agent(start, mock_model):
    return start("agent", "reporter", agent_env("reporter", mock_model))


async def engine_of(agent, mock_model, **clocked):
    mock_model.reset()
    host = Host(agent.url)
    sent = []
    engine = TriggerEngine(host, on_run=lambda ref, run: sent.append((ref.name, run, copy.deepcopy(host.last(ref.name)))),
                           **clocked)
    engine.sent = sent
    return engine, host


@pytest.fixture
async def engine_and_host(agent, mock_model):
    """The engine on the real clock (webhook calls are signed now), for what no schedule decides."""
    engine, host = await engine_of(agent, mock_model)
    yield engine, host
    await engine.close()


@pytest.fixture
async def scheduled(agent, mock_model):
    """The engine on a ManualClock at BEFORE_TWO: its schedules run when the test moves the clock."""
    clock = ManualClock(BEFORE_TWO)
    engine, host = await engine_of(agent, mock_model, clock=clock, sleep=clock.sleep)
    yield engine, host
    await engine.close()


def finished(host: Host, name: str, count: int = 1) -> list[dict]:
    """The runs that ended (not skipped) in the last status written, once there are ``count``."""
    ended = [e for e in host.last(name).get("history") or [] if e["outcome"] != SKIPPED]
    return ended if len(ended) >= count else []


async def test_a_schedule_fires_after_persisting_its_due_time(scheduled, agent):
    engine, host = scheduled
    engine.apply(on_clock("ticker", message="tick"))
    await sleeping(engine.clock)
    assert engine.sent == [] and host.last("ticker")["nextRun"] == "2026-03-02T02:00:00Z"
    engine.clock.advance(1)
    await eventually(lambda: finished(host, "ticker"), 10, what="a scheduled run")
    name, run, status_when_sent = engine.sent[0]
    assert run.source == "schedule" and run.scheduled is not None
    assert status_when_sent["lastRun"] == timestamp(run.scheduled)  # persisted before the message went out
    assert [a["runId"] for a in status_when_sent["active"]] == [run.run_id]
    assert run.scheduled == run.start == at("2026-03-02T02:00:00")
    entry = finished(host, "ticker")[0]
    assert entry["outcome"] == SUCCEEDED and entry["summary"] == "echo: tick"
    assert [e["content"] for e in events(agent, session_id=entry["sessionId"], event_type="user_message")["events"]] \
        == ["tick"]
    assert host.last("ticker")["phase"] == "Ready" and host.last("ticker")["nextRun"]


async def running(engine: TriggerEngine, mock_model, name: str, policy: str) -> None:
    """An every-second Trigger whose first run is sent and held (the model answers when the test
    releases the gate named ``name``)."""
    mock_model.script({"content": "slow", "gate": name})
    engine.apply(on_clock(name, schedule=EVERY_SECOND, concurrencyPolicy=policy))
    await one_second(engine)
    await eventually(lambda: engine.sent, 10, what="the first run sent")


async def test_forbid_skips_a_due_run_while_one_is_in_progress(scheduled, mock_model):
    engine, host = scheduled
    await running(engine, mock_model, "busy", "Forbid")
    await one_second(engine)
    history = await eventually(lambda: [e for e in host.last("busy").get("history") or []
                                        if e["outcome"] == SKIPPED], 10, what="a skipped run")
    assert "concurrencyPolicy Forbid" in history[0]["summary"]
    assert len(host.last("busy")["active"]) == 1
    mock_model.release("busy")
    await eventually(lambda: finished(host, "busy"), 10, what="the slow run ending")


async def test_replace_stops_the_run_in_progress(engine_and_host, mock_model):
    engine, host = engine_and_host
    mock_model.script({"content": "slow", "gate": "replace"})
    engine.apply(trigger("fresh", webhook=None, schedule="0 0 1 1 *", concurrencyPolicy="Replace"))
    first = await engine.fire(ref("fresh"))
    await eventually(lambda: len(engine.sent) == 1, 10, what="the first run sent")
    second = await engine.fire(ref("fresh"))
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
    assert await engine.webhook(ref("on-ci"), WebhookCall(body, "sha256=00", first.timestamp, "d1")) == NOT_SIGNED
    assert await engine.webhook(ref("on-ci"), WebhookCall(body, None, first.timestamp, "d1")) == NOT_SIGNED
    accepted = await engine.webhook(ref("on-ci"), first)
    assert accepted.status == 202 and set(accepted.body) == {"runId", "sessionId"}
    replay = await engine.webhook(ref("on-ci"), first)
    assert replay.status == 200 and replay.body["runId"] == accepted.body["runId"]
    redelivered = await engine.webhook(ref("on-ci"), signed(body, delivery="d1"))  # the sender's, re-signed
    assert redelivered.status == 200 and redelivered.body["runId"] == accepted.body["runId"]
    captured = WebhookCall(body, first.signature, first.timestamp, "d2")  # another delivery id: not signed
    assert await engine.webhook(ref("on-ci"), captured) == NOT_SIGNED
    await eventually(lambda: finished(host, "on-ci"), 10, what="the webhook run")
    found = events(agent, session_id=accepted.body["sessionId"], event_type="user_message")["events"]
    assert [e["content"] for e in found] == ["CI says: build 7 failed"]
    assert len(engine.sent) == 1  # the replays ran nothing
    assert str(SECRET) not in str(host.written) and SECRET.decode() not in str(host.written)


async def test_suspended_and_missing_secret_and_unknown(engine_and_host):
    engine, host = engine_and_host
    body = b"{}"
    engine.apply(webhook_trigger("paused", suspend=True))
    assert (await engine.webhook(ref("paused"), signed(body))).status == 409
    assert (await engine.webhook(ref("paused"), signed(body, b"bad"))) == NOT_SIGNED

    async def unreadable(namespace, name, key):
        raise ConnectionError("the API server does not answer")

    host.secret = unreadable
    assert (await engine.webhook(ref("paused"), signed(body))).status == 503
    assert engine.sent == []


async def test_unknown_triggers_missing_keys_and_bad_signatures_get_one_answer(engine_and_host):
    """Nothing tells a caller without the key whether the Trigger exists, has a webhook or a key."""
    engine, host = engine_and_host
    body = b"{}"
    engine.apply(webhook_trigger("guarded"))
    engine.apply(trigger("keyless", schedule=None, webhook={"secretRef": {"name": "ci-hook", "key": "absent"}}))
    engine.apply(trigger("scheduled", schedule="0 0 1 1 *"))
    answers = [await engine.webhook(ref(name), signed(body, key))
               for name, key in (("nobody", SECRET), ("scheduled", SECRET), ("keyless", SECRET), ("guarded", b"bad"))]
    assert answers == [NOT_SIGNED] * 4
    assert NOT_SIGNED.status == 401 and "no webhook here" in NOT_SIGNED.body["detail"]
    assert engine.sent == [] and "guarded" not in str(answers)


async def test_allow_runs_at_most_max_concurrent_runs_and_refuses_the_rest(engine_and_host, mock_model):
    engine, host = engine_and_host
    mock_model.script({"content": "slow", "gate": "cap"}, {"content": "slow", "gate": "cap"})
    engine.apply(webhook_trigger("capped", concurrencyPolicy="Allow", limits={"maxConcurrentRuns": 2}))
    try:
        answers = [await engine.webhook(ref("capped"), signed(f'{{"n": {n}}}'.encode())) for n in range(6)]
        assert [a.status for a in answers] == [202, 202, 429, 429, 429, 429]
        assert answers[2].headers == {"Retry-After": "5"}
        assert answers[2].body["detail"] == "limits.maxConcurrentRuns (2) runs are in progress: try again later"
        assert len(host.last("capped")["active"]) == 2 and host.last("capped")["history"] == []
    finally:
        mock_model.release("cap")
    await eventually(lambda: finished(host, "capped", 2), 15, what="the two runs ended")
    assert len(engine.sent) == 2 and len(host.last("capped")["history"]) == 2  # the refused calls left no trace
    assert (await engine.webhook(ref("capped"), signed(b"{}"))).status == 202  # room again


async def test_runs_send_the_credential_of_their_secret_and_fail_saying_why_without_it(start, mock_model):
    mock_model.reset()
    guarded = start("agent", "guarded-engine", agent_env("guarded-engine", mock_model, AUTH_API_KEYS="run-key"))
    host = Host(guarded.url)
    host.secrets[("team", "reporter-key", "token")] = b"run-key\n"  # a Secret's trailing line break is not sent
    host.secrets[("team", "reporter-keys", "all")] = b"run-key,other-key"
    engine = TriggerEngine(host)
    try:
        for name, key in (("keyed", {"name": "reporter-key", "key": "token"}),
                          ("unkeyed", None),
                          ("missing", {"name": "reporter-key", "key": "absent"}),
                          ("listed", {"name": "reporter-keys", "key": "all"})):
            engine.apply(trigger(name, schedule="0 0 1 1 *", credentials=key and {"secretKeyRef": key}))
            assert (await engine.fire(ref(name))).status == 202
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
    assert (await engine.run_now(ref("on-demand"), None)) is None
    host.refuse = True  # not recorded: not run, and tried again
    assert (await engine.run_now(ref("on-demand"), "1")).status == 503
    host.refuse = False
    assert (await engine.run_now(ref("on-demand"), "1")).status == 202
    assert (await engine.run_now(ref("on-demand"), "1")) is None
    await eventually(lambda: finished(host, "on-demand"), 10, what="the requested run")
    written = host.last("on-demand")
    assert written["runNow"] == "1" and written["history"][0]["source"] == "manual"

    restarted = TriggerEngine(host)
    try:
        restarted.apply({**trigger("on-demand", schedule="0 0 1 1 *"), "status": written})
        assert (await restarted.run_now(ref("on-demand"), "1")) is None  # handled before the restart
        assert (await restarted.run_now(ref("on-demand"), "2")).status == 202
        assert restarted.status(ref("on-demand"))["runNow"] == "2"
    finally:
        await restarted.close()
    assert len(engine.sent) == 1


async def test_a_run_that_cannot_be_recorded_is_not_sent(engine_and_host):
    engine, host = engine_and_host
    engine.apply(trigger("unrecorded", schedule="0 0 1 1 *"))
    host.refuse = True
    assert (await engine.fire(ref("unrecorded"))).status == 503
    assert engine.sent == [] and engine.status(ref("unrecorded"))["active"] == []


async def test_the_history_stays_bounded(engine_and_host):
    engine, host = engine_and_host
    engine.apply(trigger("bounded", schedule="0 0 1 1 *", historyLimit=2, concurrencyPolicy="Allow"))
    for _ in range(4):
        assert (await engine.fire(ref("bounded"))).status == 202
    await eventually(lambda: len(engine.sent) == 4 and not engine.status(ref("bounded"))["active"], 15,
                     what="four runs ended")
    assert len(host.last("bounded")["history"]) == 2


async def test_deleting_a_trigger_stops_its_schedule_and_its_runs(scheduled, mock_model):
    engine, host = scheduled
    await running(engine, mock_model, "doomed", "Allow")
    state = engine.triggers[ref("doomed")]
    engine.delete(ref("doomed"))
    await asyncio.gather(state.schedule, *state.runs.values(), return_exceptions=True)
    assert state.schedule.cancelled() and all(task.done() for task in state.runs.values())
    assert engine.status(ref("doomed")) is None
    mock_model.release("doomed")


async def test_a_restart_neither_fires_a_handled_due_time_again_nor_loses_a_missed_one(agent, mock_model):
    mock_model.reset()
    clock = ManualClock(at("2026-03-02T10:00:30"))
    latest = at("2026-03-02T10:00:00")  # the latest due time of * * * * *
    host = Host(agent.url)
    sent = []
    engine = TriggerEngine(host, clock=clock, sleep=clock.sleep, on_run=lambda ref, run: sent.append((ref.name, run)))
    try:
        handled = builders.trigger("handled", schedule="* * * * *")
        handled["status"] = {"lastRun": timestamp(latest),
                             "active": [{"runId": "old", "sessionId": "s", "startTime": timestamp(latest),
                                         "source": "schedule"}]}
        missed = builders.trigger("missed", schedule="* * * * *")
        missed["status"] = {"lastRun": timestamp(latest - timedelta(minutes=1))}
        engine.apply(handled)
        engine.apply(missed)
        await eventually(lambda: finished(host, "missed"), 10, what="the missed due time run")
        assert [(name, run.scheduled) for name, run in sent] == [("missed", latest)]
        await sleeping(clock, 2)
        state = engine.triggers[ref("handled")]
        assert state.last_run == latest and state.next_run == latest + timedelta(minutes=1)
        interrupted = engine.status(ref("handled"))["history"][0]
        assert (interrupted["runId"], interrupted["outcome"]) == ("old", FAILED)
        assert interrupted["summary"].startswith("interrupted")
    finally:
        await engine.close()


async def test_a_generation_is_taken_once(scheduled):
    """A control plane hands the engine a Trigger on every event; only a new generation restarts it."""
    engine, host = scheduled
    nightly = on_clock("once")
    assert engine.apply(nightly) is True
    schedule = engine.triggers[ref("once")].schedule
    assert engine.apply(copy.deepcopy(nightly)) is False
    assert engine.triggers[ref("once")].schedule is schedule and not schedule.done()
    changed = copy.deepcopy(nightly)
    changed["metadata"]["generation"] += 1
    changed["spec"]["schedule"] = "0 3 * * *"
    assert engine.apply(changed) is True
    await asyncio.gather(schedule, return_exceptions=True)
    assert schedule.cancelled() and engine.status(ref("once"))["nextRun"] == "2026-03-02T03:00:00Z"


async def test_a_failed_schedule_is_reported_and_restarts(scheduled):
    """A schedule whose cron library fails (croniter cannot go past year 9999) says so in its
    status, without a next run, and restarts after the backoff."""
    engine, host = scheduled
    clock = engine.clock
    engine.apply(on_clock("overflow"))
    await sleeping(clock)
    clock.set(at("9999-12-31T03:00:00"))  # the next due time (0 2 * * *) is past what dates can hold
    clock.advance(1)
    failed = await eventually(lambda: host.last("overflow").get("phase") == "Failed" and host.last("overflow"), 10,
                              what="the schedule's failure in the status")
    ready = {c["type"]: c for c in failed["conditions"]}["Ready"]
    assert (ready["status"], ready["reason"]) == ("False", "ScheduleFailed")
    assert failed["message"].startswith("the schedule failed (OverflowError") and "nextRun" not in failed
    assert failed["message"].endswith(f"it restarts in {RESTART_BASE_SECONDS:g} s")
    assert engine.triggers[ref("overflow")].schedule.done() is False  # supervised, waiting to restart

    await sleeping(clock)
    clock.set(at("2026-03-03T01:00:00"))  # a time the cron library can handle again
    clock.advance(RESTART_BASE_SECONDS)
    recovered = await eventually(lambda: host.last("overflow").get("phase") == "Ready" and host.last("overflow"), 10,
                                 what="the restarted schedule")
    assert recovered["nextRun"] == "2026-03-03T02:00:00Z"

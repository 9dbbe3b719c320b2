"""Triggers end to end: a schedule fires into the agent's memory and the history, the webhook
checks its signature (over the timestamp, the delivery id and the body), answers an unknown
Trigger as a bad signature, renders the payload, runs a delivery once, accepts the documented
shell line, refuses calls past limits.maxConcurrentRuns with 429, a manual run, Forbid skips a
run while one runs (the skips never push a run out of the history) and limits.timeout ends it,
and deleting a Trigger stops it. The agent's
model is the shared ModelAPI (locally: the mock model server, which echoes the message it gets)."""

from __future__ import annotations

import json
import subprocess
import uuid
from datetime import datetime, timezone

import httpx
import pytest

from e2e.conftest import (
    BACKEND,
    backend,
    create_agent_resource,
    create_custom_resource,
    delete_custom_resource,
    deploy_and_wait,
    gateway_url,
    get_custom_resource,
    wait_for_status,
)
from kaos.api import API_VERSION
from kaos.triggers.signature import signed_headers
from tests.support.polling import wait_until
from tests.triggers.builders import documented_call
from tests.triggers.builders import post_webhook as post

pytestmark = [pytest.mark.e2e, pytest.mark.dataplane]

SECRET = "e2e-webhook-key"
# The shared ModelAPI's mock model echoes the last user message (see shared_modelapi).
REPORT = "echo: Write the report."


@pytest.fixture(scope="module")
def reporter(test_namespace, shared_modelapi) -> str:
    deploy_and_wait(create_agent_resource(test_namespace, "reporter", shared_modelapi), test_namespace)
    return "reporter"


def trigger(name: str, agent: str, **spec) -> dict:
    return {"apiVersion": API_VERSION, "kind": "Trigger", "metadata": {"name": name},
            "spec": {"agent": agent, **spec}}


def history(name: str, namespace: str) -> list[dict]:
    return ((get_custom_resource("Trigger", name, namespace) or {}).get("status") or {}).get("history") or []


def ended(name: str, namespace: str, count: int = 1) -> list[dict]:
    runs = [run for run in history(name, namespace) if run["outcome"] != "Skipped"]
    return runs if len(runs) >= count else []


def user_messages(agent_url: str, session: str) -> list[str]:
    found = httpx.get(f"{agent_url}/memory/events", params={"session_id": session, "event_type": "user_message"},
                      timeout=30).json()["events"]
    return [event["content"] for event in found]


def test_a_schedule_fires_into_the_agents_memory_and_the_history(test_namespace, reporter):
    create_custom_resource(trigger("every-2s", reporter, schedule="* * * * * */2",
                                   message="Write the report.", historyLimit=2), test_namespace)
    status = wait_for_status("Trigger", "every-2s", test_namespace, "Ready", timeout=60)["status"]
    assert status["nextRun"] and status["ready"] is True
    agent = gateway_url(test_namespace, "agent", reporter)
    sessions = lambda: {s for s in httpx.get(f"{agent}/memory/sessions", timeout=30).json()["sessions"]  # noqa: E731
                        if s.startswith("trigger-every-2s-")}
    wait_until(lambda: len(sessions()) >= 3 and ended("every-2s", test_namespace, 2), 60, what="three scheduled runs")
    runs = ended("every-2s", test_namespace, 2)
    assert len(runs) == 2  # historyLimit, after three runs (a due time that found a run still going is Skipped)
    assert {run["outcome"] for run in runs} == {"Succeeded"} and all(run["source"] == "schedule" for run in runs)
    run = runs[-1]
    assert run["summary"] == REPORT and run["sessionId"].startswith("trigger-every-2s-")
    assert (datetime.fromisoformat(run["startTime"].replace("Z", "+00:00"))
            - datetime.fromisoformat(run["scheduledTime"].replace("Z", "+00:00"))).total_seconds() < 2, \
        "a run starts at its own due time, before the next"
    assert user_messages(agent, run["sessionId"]) == ["Write the report."]

    delete_custom_resource("Trigger", "every-2s", test_namespace)
    wait_until(lambda: get_custom_resource("Trigger", "every-2s", test_namespace) is None, 30, what="deleted")
    before = sessions()
    later = datetime.now(timezone.utc).timestamp() + 5  # two more due times would have passed
    wait_until(lambda: datetime.now(timezone.utc).timestamp() >= later, 10, what="five seconds")
    assert sessions() == before, "a deleted Trigger runs no more"


def test_the_webhook_checks_renders_and_runs_a_delivery_once(test_namespace, reporter):
    create_custom_resource({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "ci-hook"},
                            "stringData": {"hmac": SECRET}}, test_namespace)
    create_custom_resource(trigger("ci-failed", reporter, webhook={"secretRef": {"name": "ci-hook", "key": "hmac"}},
                                   message="CI failed on {{ .body.repo }}: {{ .body.error }}",
                                   concurrencyPolicy="Allow"), test_namespace)
    create_custom_resource(trigger("no-hook", reporter, schedule="0 0 1 1 *", message="x"), test_namespace)
    wait_for_status("Trigger", "ci-failed", test_namespace, "Ready", timeout=60)
    url = f"{backend().gateway}/{test_namespace}/trigger/ci-failed"
    body = json.dumps({"repo": "kaos", "error": "test_x failed"}).encode()
    key = SECRET.encode()
    call = signed_headers(key, body)

    assert post(url, body).status_code == 400  # no timestamp, no delivery id
    bad = post(url, body, {**call, "X-KAOS-Signature-256": signed_headers(b"wrong", body)["X-KAOS-Signature-256"]})
    assert bad.status_code == 401
    stale = signed_headers(key, body, timestamp=int(datetime.now(timezone.utc).timestamp()) - 301)
    assert post(url, body, stale).status_code == 401
    assert post(url, b"x" * (1024 * 1024 + 1), signed_headers(key, b"x" * (1024 * 1024 + 1))).status_code == 413
    # No telling an unknown Trigger, one without a webhook, a missing signature and a wrong one apart.
    for other in (url.replace("/ci-failed", "/nobody"), url.replace("/ci-failed", "/no-hook")):
        assert (post(other, body, call).status_code, post(other, body, call).json()) == (401, bad.json())
    assert post(url, body, {**call, "X-KAOS-Signature-256": ""}).json() == bad.json()
    assert history("ci-failed", test_namespace) == [], "a refused call starts nothing"

    accepted = post(url, body, call)
    assert accepted.status_code == 202, accepted.text
    run = accepted.json()
    replay = post(url, body, call)
    assert replay.status_code == 200 and replay.json()["runId"] == run["runId"] and replay.json()["replay"]
    captured = post(url, body, {**call, "X-KAOS-Delivery": str(uuid.uuid4())})  # sent again as a new delivery
    assert (captured.status_code, captured.json()) == (401, bad.json())

    delivery = call["X-KAOS-Delivery"]
    runs = wait_until(lambda: ended("ci-failed", test_namespace), 60, what="the webhook run")
    assert [(r["runId"], r["outcome"], r["deliveryId"]) for r in runs] == [(run["runId"], "Succeeded", delivery)]
    agent = gateway_url(test_namespace, "agent", reporter)
    assert user_messages(agent, run["sessionId"]) == ["CI failed on kaos: test_x failed"]

    # docs/triggers.md's shell lines, run as written (openssl, curl) against this Trigger.
    documented = documented_call().replace("http://127.0.0.1:8080/default/trigger/ci-failed", url)
    sent = subprocess.run(["bash", "-c", documented.replace("change-me-to-a-long-random-key", SECRET)],
                          capture_output=True, text=True, timeout=60)
    assert sent.returncode == 0 and sent.stdout.startswith("HTTP/1.1 202"), sent.stdout + sent.stderr
    wait_until(lambda: ended("ci-failed", test_namespace, 2), 60, what="the documented call's run")

    create_custom_resource(trigger("ci-failed", reporter, webhook={"secretRef": {"name": "ci-hook", "key": "hmac"}},
                                   message="CI failed", suspend=True), test_namespace)
    wait_for_status("Trigger", "ci-failed", test_namespace, "Suspended", timeout=30)
    assert post(url, body, signed_headers(key, body)).status_code == 409
    assert post(url, body, {**signed_headers(key, body), "X-KAOS-Signature-256": "sha256=00"}).json() == bad.json()
    status = get_custom_resource("Trigger", "ci-failed", test_namespace)["status"]
    assert SECRET not in json.dumps(status)
    delete_custom_resource("Trigger", "no-hook", test_namespace)


def test_max_concurrent_runs_refuses_calls_past_it(test_namespace, reporter, mock_model_server):
    mock_model_server.reset()
    create_custom_resource({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "cap-hook"},
                            "stringData": {"hmac": SECRET}}, test_namespace)
    create_custom_resource(trigger("capped", reporter, webhook={"secretRef": {"name": "cap-hook", "key": "hmac"}},
                                   message="{{ .body.n }}", concurrencyPolicy="Allow",
                                   limits={"maxConcurrentRuns": 1}), test_namespace)
    wait_for_status("Trigger", "capped", test_namespace, "Ready", timeout=60)
    url = f"{backend().gateway}/{test_namespace}/trigger/capped"
    mock_model_server.script([{"content": "done", "gate": "e2e-trigger-cap"}])
    try:
        first = post(url, b'{"n": 1}', signed_headers(SECRET.encode(), b'{"n": 1}'))
        assert first.status_code == 202, first.text
        wait_until(lambda: mock_model_server.requests(), 30, what="the run's model call")
        for number in range(2, 6):
            body = json.dumps({"n": number}).encode()
            refused = post(url, body, signed_headers(SECRET.encode(), body))
            assert (refused.status_code, refused.headers.get("retry-after")) == (429, "5"), refused.text
            assert "limits.maxConcurrentRuns (1)" in refused.json()["detail"]
    finally:
        httpx.post(f"{mock_model_server.url}/_mock/release", json={"gate": "e2e-trigger-cap"}, timeout=10)
    runs = wait_until(lambda: ended("capped", test_namespace), 30, what="the run ended")
    assert [r["runId"] for r in runs] == [first.json()["runId"]] and len(mock_model_server.requests()) == 1
    assert history("capped", test_namespace) == runs  # the refused calls left no trace


@pytest.mark.skipif(BACKEND != "local", reason="kaos trigger run drives the local control plane")
def test_kaos_trigger_run_starts_a_run_now(test_namespace, reporter):
    from e2e.test_cli import kaos

    create_custom_resource(trigger("yearly", reporter, schedule="0 0 1 1 *", message="Run now."), test_namespace)
    wait_for_status("Trigger", "yearly", test_namespace, "Ready", timeout=60)
    started = kaos("trigger", "run", "yearly", "-n", test_namespace)
    assert started.returncode == 0, started.stderr
    assert "run " in started.stdout and "started in session trigger-yearly-" in started.stdout
    runs = wait_until(lambda: ended("yearly", test_namespace), 60, what="the manual run")
    assert runs[0]["source"] == "manual" and runs[0]["summary"] == "echo: Run now."
    table = kaos("get", "triggers", "-n", test_namespace)
    row = next(line.split() for line in table.stdout.splitlines() if line.startswith("yearly "))
    assert row[-2:] == ["Succeeded", "Ready"]
    missing = kaos("trigger", "run", "nobody", "-n", test_namespace)
    assert missing.returncode == 1 and "no trigger" in missing.stderr
    deleted = kaos("delete", "trigger", "yearly", "-n", test_namespace)
    assert deleted.returncode == 0 and f"Trigger {test_namespace}/yearly deleted" in deleted.stdout, deleted.stderr
    assert get_custom_resource("Trigger", "yearly", test_namespace) is None


@pytest.mark.skipif(BACKEND != "local", reason="steers the mock model server, and `kaos trigger run` is local")
def test_forbid_skips_a_run_while_one_runs_and_the_timeout_ends_it(test_namespace, reporter, mock_model_server):
    from kaos.cli.client import ControlPlaneError

    mock_model_server.reset()
    # The first run answers at once; the second answers when released (after its timeout).
    mock_model_server.script(["quick", {"content": "too late", "gate": "e2e-trigger-slow"}])
    create_custom_resource(trigger("slow", reporter, schedule="0 0 1 1 *", message="Take your time.",
                                   limits={"timeout": "5s"}, historyLimit=2), test_namespace)
    wait_for_status("Trigger", "slow", test_namespace, "Ready", timeout=60)
    client = backend().client
    try:
        quick = client.run_trigger("slow", test_namespace)
        wait_until(lambda: ended("slow", test_namespace), 30, what="the quick run ended")
        first = client.run_trigger("slow", test_namespace)
        wait_until(lambda: len(mock_model_server.requests()) == 2, 30, what="the slow run's model call")
        for _ in range(7):
            with pytest.raises(ControlPlaneError, match="skipped: concurrencyPolicy Forbid and run"):
                client.run_trigger("slow", test_namespace)
        wait_until(lambda: first["runId"] in {r["runId"] for r in ended("slow", test_namespace)}, 30,
                   what="the slow run ended")
    finally:
        httpx.post(f"{mock_model_server.url}/_mock/release", json={"gate": "e2e-trigger-slow"}, timeout=10)
    entries = history("slow", test_namespace)
    runs = [e for e in entries if e["outcome"] != "Skipped"]
    # The skips never push a run out of the history (historyLimit 2): the newest 5 are kept apart.
    assert [e["outcome"] for e in entries] == ["Succeeded"] + ["Skipped"] * 5 + ["TimedOut"]
    assert "run " + first["runId"] in entries[1]["summary"]
    assert [r["runId"] for r in runs] == [quick["runId"], first["runId"]]
    assert runs[1]["summary"] == "timed out: the run took longer than limits.timeout (5 s)"

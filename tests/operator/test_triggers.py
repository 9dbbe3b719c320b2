"""The operator runs Triggers (kmock as the API server): a schedule's runs and its status written
at once through the API, the webhook server's answers, the run-now annotation, deletion."""

import base64
import json

import httpx

from kaos.local.ports import free_port
from kaos.triggers.signature import signed_headers
from tests.operator.conftest import NAMESPACE as NS
from tests.support.polling import eventually

SECRET = b"operator-hook-key"


def proxy_api():
    return {"mode": "Proxy", "proxyConfig": {"models": ["m"]}}


def agent():
    return {"modelAPI": "llm", "model": "m"}


async def create_webhook(cluster, name: str, **spec) -> None:
    """The Secret hook and a webhook Trigger on the Agent reporter, Ready."""
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "hook", "namespace": NS},
              "data": {"hmac": base64.b64encode(SECRET).decode()}}
    response = await cluster.kmock.post(f"/api/v1/namespaces/{NS}/secrets", json=secret)
    assert response.status < 300, await response.text()
    await cluster.create("Trigger", name, {"agent": "reporter", "webhook": {"secretRef": {"name": "hook", "key": "hmac"}},
                                           "message": "{{ .body.x }}", "concurrencyPolicy": "Allow", **spec})
    await eventually(lambda: cluster.status("Trigger", name).get("phase") == "Ready", 30)


async def test_a_schedule_runs_and_its_status_is_written(start_operator, monkeypatch):
    port = free_port()
    monkeypatch.setenv("KAOS_TRIGGER_PORT", str(port))
    async with start_operator() as operator:
        cluster = operator.cluster
        await cluster.create("ModelAPI", "llm", proxy_api())
        await cluster.create("Agent", "reporter", agent())
        await eventually(lambda: cluster.status("Agent", "reporter").get("ready"), 60)
        await cluster.create("Trigger", "ticker", {"agent": "reporter", "schedule": "* * * * * *",
                                                   "message": "tick", "historyLimit": 3})
        # The agent's cluster endpoint is not reachable from the tests: each run fails, saying so.
        status = await eventually(lambda: len(cluster.status("Trigger", "ticker").get("history") or []) >= 2
                                  and cluster.status("Trigger", "ticker"), 30)
        assert status["phase"] == "Ready" and status["lastRun"] and status["nextRun"]
        run = status["history"][-1]
        assert run["outcome"] == "Failed" and run["summary"].startswith("cannot reach the agent at http://agent-reporter.")
        await eventually(lambda: len(cluster.status("Trigger", "ticker").get("history") or []) == 3, 30)
        assert len(cluster.status("Trigger", "ticker")["history"]) == 3  # historyLimit

        await create_webhook(cluster, "hook")
        url = f"http://127.0.0.1:{port}/{NS}/trigger/hook"
        body = json.dumps({"x": "hello"}).encode()
        call = signed_headers(SECRET, body, delivery="d1")
        async with httpx.AsyncClient() as http:
            bad = await http.post(url, content=body, headers={**call, "X-KAOS-Signature-256": "sha256=00"})
            assert bad.status_code == 401
            unknown = await http.post(f"http://127.0.0.1:{port}/{NS}/trigger/nobody", content=body, headers=call)
            assert (unknown.status_code, unknown.json()) == (401, bad.json())  # no telling which
            accepted = await http.post(url, content=body, headers=call)
            assert accepted.status_code == 202, accepted.text
            replay = await http.post(url, content=body, headers=call)
            assert replay.status_code == 200 and replay.json()["runId"] == accepted.json()["runId"]
            captured = await http.post(url, content=body, headers={**call, "X-KAOS-Delivery": "d2"})
            assert (captured.status_code, captured.json()) == (401, bad.json())
        await eventually(lambda: cluster.status("Trigger", "hook").get("history"), 30)
        assert "operator-hook-key" not in json.dumps(cluster.get("Trigger", "hook"))

        response = await cluster.kmock.patch(
            f"/apis/kaos.tools/v1alpha1/namespaces/{NS}/triggers/hook",
            json={"metadata": {"annotations": {"kaos.tools/run-now": "1"}}},
            headers={"Content-Type": "application/merge-patch+json"})
        assert response.status < 300, await response.text()
        manual = await eventually(lambda: [e for e in cluster.status("Trigger", "hook").get("history") or []
                                           if e["source"] == "manual"], 30, what="the run-now run")
        assert len(manual) == 1 and cluster.status("Trigger", "hook")["runNow"] == "1"

        await cluster.delete("Trigger", "ticker")
        await eventually(lambda: cluster.get("Trigger", "ticker") is None, 30)


async def test_a_replay_runs_nothing_after_an_operator_restart_whatever_the_history_holds(start_operator, monkeypatch):
    """The delivery ids that started a run are in status.deliveries, apart from the history:
    an operator that restarts within the window still knows them."""
    port = free_port()
    monkeypatch.setenv("KAOS_TRIGGER_PORT", str(port))
    url = f"http://127.0.0.1:{port}/{NS}/trigger/hook"
    body = json.dumps({"x": "pay 100"}).encode()
    captured = signed_headers(SECRET, body, delivery="first")
    async with start_operator() as operator, httpx.AsyncClient() as http:
        cluster = operator.cluster
        await cluster.create("ModelAPI", "llm", proxy_api())
        await cluster.create("Agent", "reporter", agent())
        await eventually(lambda: cluster.status("Agent", "reporter").get("ready"), 60)
        await create_webhook(cluster, "hook", historyLimit=1)
        first = await http.post(url, content=body, headers=captured)
        assert first.status_code == 202, first.text
        for delivery in ("second", "third"):  # runs that push the first out of the history
            later = await http.post(url, content=body, headers=signed_headers(SECRET, body, delivery=delivery))
            assert later.status_code == 202, later.text
        status = await eventually(lambda: (lambda s: not s.get("active") and len(s.get("history") or []) == 1
                                           and s["history"][0]["deliveryId"] == "third" and s)(
                                               cluster.status("Trigger", "hook")), 30, what="the three runs ended")
        assert [d["deliveryId"] for d in status["deliveries"]] == ["first", "second", "third"]

    async with start_operator() as operator, httpx.AsyncClient() as http:
        cluster = operator.cluster

        async def answered():
            try:
                response = await http.post(url, content=body, headers=captured)
            except httpx.TransportError:
                return None  # the webhook server is not up yet
            return response if response.status_code not in (401, 404) else None  # the Trigger is not known yet

        replay = await eventually(answered, 30, what="the restarted operator's answer")
        assert (replay.status_code, replay.json()) == (200, {**first.json(), "replay": True})
        assert [e["deliveryId"] for e in cluster.status("Trigger", "hook")["history"]] == ["third"]  # nothing ran

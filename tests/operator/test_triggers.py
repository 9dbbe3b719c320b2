"""The operator runs Triggers (kmock as the API server): a schedule's runs and its status written
at once through the API, the webhook server's answers, the run-now annotation, deletion."""

import base64
import json

import httpx

from kaos.local.ports import free_port
from kaos.triggers.signature import signature
from tests.operator.conftest import NAMESPACE as NS
from tests.support.polling import eventually

SECRET = b"operator-hook-key"


def proxy_api():
    return {"mode": "Proxy", "proxyConfig": {"models": ["m"]}}


def agent():
    return {"modelAPI": "llm", "model": "m"}


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

        secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "hook", "namespace": NS},
                  "data": {"hmac": base64.b64encode(SECRET).decode()}}
        response = await cluster.kmock.post(f"/api/v1/namespaces/{NS}/secrets", json=secret)
        assert response.status < 300, await response.text()
        await cluster.create("Trigger", "hook", {"agent": "reporter", "webhook": {"secretRef": {"name": "hook", "key": "hmac"}},
                                                 "message": "{{ .body.x }}", "concurrencyPolicy": "Allow"})
        await eventually(lambda: cluster.status("Trigger", "hook").get("phase") == "Ready", 30)
        url = f"http://127.0.0.1:{port}/{NS}/trigger/hook"
        body = json.dumps({"x": "hello"}).encode()
        async with httpx.AsyncClient() as http:
            assert (await http.post(url, content=body, headers={"X-KAOS-Signature-256": "sha256=00"})).status_code == 401
            accepted = await http.post(url, content=body, headers={"X-KAOS-Signature-256": signature(SECRET, body),
                                                                    "X-KAOS-Delivery": "d1"})
            assert accepted.status_code == 202, accepted.text
            replay = await http.post(url, content=body, headers={"X-KAOS-Signature-256": signature(SECRET, body),
                                                                  "X-KAOS-Delivery": "d1"})
            assert replay.status_code == 200 and replay.json()["runId"] == accepted.json()["runId"]
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

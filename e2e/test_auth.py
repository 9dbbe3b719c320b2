"""A whole network with authentication on, end to end under a control plane whose platform
requires it (KAOS_AUTH_REQUIRED=true, the platform chart's auth.required):

- an unguarded Agent and MCPServer are Failed with a message, never served open;
- a Proxy ModelAPI, a python-string MCPServer and two Agents with spec.auth are Ready, the
  MCPServer's tools listed although the control plane holds no key;
- through the gateway a request without the user's token gets 401 with WWW-Authenticate, with
  it the coordinator delegates to the worker (with its own credential), the worker calls the
  guarded MCP tool and both call the guarded ModelAPI (with theirs);
- sessions are their callers': another key reads neither the coordinator's session nor the
  worker's session of the delegated turn (owned by the person, relayed: ``key:1 via key:2``), the
  worker's admin (spec.auth.admins) reads both;
- a Trigger's run reaches a guarded agent with the Trigger's spec.credentials, and without them
  fails saying what to set;
- no key or token appears in a log line, a status, a memory event or a rendered ConfigMap.

Local backend only: it starts its own control plane with the setting on."""

from __future__ import annotations

import base64
import json
import os
import secrets
import uuid
from pathlib import Path

import httpx
import pytest

from e2e.conftest import (
    BACKEND,
    ROOT,
    SHARED_MODEL,
    MockModelServer,
    create_agent_resource,
    create_mcpserver_resource,
    create_modelapi_resource,
    fenced,
)
from kaos.cli.client import Client, spawn_control_plane, stop_control_plane
from kaos.local.ports import free_port
from tests.support.polling import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.dataplane,
              pytest.mark.skipif(BACKEND == "cluster", reason="starts its own local control plane")]

NS = "secure"
USER_KEY = f"kaos-user-{secrets.token_hex(12)}"
COORDINATOR_TOKEN = f"kaos-coordinator-{secrets.token_hex(12)}"
WORKER_TOKEN = f"kaos-worker-{secrets.token_hex(12)}"
TRIGGER_TOKEN = f"kaos-trigger-{secrets.token_hex(12)}"
PLANTED = (USER_KEY, COORDINATOR_TOKEN, WORKER_TOKEN, TRIGGER_TOKEN)
KEYS = {"apiKeys": {"secretKeyRef": {"name": "platform-keys", "key": "accepted"}}}
TOOLS = '''
def shout(message: str) -> str:
    """Upper-case a message."""
    return message.upper()
'''


def secret(name: str, **data: str) -> dict:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": NS},
            "data": {key: base64.b64encode(value.encode()).decode() for key, value in data.items()}}


def guarded(resource: dict, token_secret: str | None = None, **extra) -> dict:
    auth = {**KEYS, **extra}
    if token_secret:
        auth["credentials"] = {"secretKeyRef": {"name": token_secret, "key": "token"}}
    resource["spec"]["auth"] = auth
    return resource


class Plane:
    def __init__(self, home: Path) -> None:
        self.home = home
        tools = ROOT / ".tools" / "bin"
        self.state = spawn_control_plane(home, free_port(), timeout=60, extra_env={
            "KAOS_AUTH_REQUIRED": "true", "PATH": f"{tools}{os.pathsep}{os.environ.get('PATH', '')}"})
        self.client = Client.of(self.state, timeout=60)

    def url(self, segment: str, name: str) -> str:
        return f"{self.state.url}/{NS}/{segment}/{name}"

    def status(self, kind: str, name: str) -> dict:
        item = next((i for i in self.client.resources(kind, NS) if i["metadata"]["name"] == name), None)
        return (item or {}).get("status") or {}

    def phase(self, kind: str, name: str, phase: str, timeout: float = 180) -> dict:
        def reached():
            status = self.status(kind, name)
            if status.get("phase") == "Failed" and phase != "Failed":
                raise AssertionError(f"{kind} {name} is Failed: {status.get('message')}")
            return status if status.get("phase") == phase else None

        return wait_until(reached, timeout, interval=0.2, what=f"{kind} {name} to be {phase}")


@pytest.fixture(scope="module")
def mock_model():
    server = MockModelServer()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def plane(tmp_path_factory, mock_model):
    plane = Plane(tmp_path_factory.mktemp("auth-plane") / f"home-{uuid.uuid4().hex[:6]}")
    accepted = ",".join(PLANTED)
    modelapi = guarded(create_modelapi_resource(NS, "llm", models=[SHARED_MODEL], api_base=mock_model.url))
    tools = guarded(create_mcpserver_resource(NS, "tools", TOOLS))
    # USER_KEY is key:1 of every guarded workload (the first in platform-keys): the worker's admin.
    worker = guarded(create_agent_resource(NS, "worker", "llm", mcp_servers=["tools"]), "worker-token",
                     admins=["key:1"])
    coordinator = guarded(create_agent_resource(NS, "coordinator", "llm", access=["worker"]), "coordinator-token")
    unguarded = [create_agent_resource(NS, "open-agent", "llm"), create_mcpserver_resource(NS, "open-tools", TOOLS)]
    documents = [secret("platform-keys", accepted=accepted), secret("worker-token", token=WORKER_TOKEN),
                 secret("coordinator-token", token=COORDINATOR_TOKEN), secret("trigger-token", token=TRIGGER_TOKEN),
                 modelapi, tools, worker, coordinator, *unguarded]
    plane.client.apply([(document, "auth.yaml") for document in documents])
    try:
        for kind, name in (("ModelAPI", "llm"), ("MCPServer", "tools"), ("Agent", "worker"), ("Agent", "coordinator")):
            plane.phase(kind, name, "Ready")
        yield plane
    finally:
        stop_control_plane(plane.home, timeout=60)


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def test_unguarded_resources_fail_closed(plane):
    for kind, name in (("Agent", "open-agent"), ("MCPServer", "open-tools")):
        status = plane.phase(kind, name, "Failed", timeout=30)
        assert "requires authentication (auth.required)" in status["message"], status
        assert not status.get("ready")
    assert not [row for row in plane.client.deployments() if row["name"] in ("agent-open-agent", "mcpserver-open-tools")]


def test_the_guarded_mcpservers_tools_are_listed(plane):
    assert wait_until(lambda: plane.status("MCPServer", "tools").get("tools"), 60, interval=0.2,
                      what="status.tools of the guarded MCPServer") == ["shout"]


def test_every_endpoint_refuses_the_gateways_callers_without_a_token(plane):
    chat = {"model": SHARED_MODEL, "messages": [{"role": "user", "content": "hi"}]}
    for url, probe in ((plane.url("agent", "coordinator") + "/v1/chat/completions", "/health"),
                       (plane.url("modelapi", "llm") + "/v1/chat/completions", "/health/liveliness"),
                       (plane.url("mcp", "tools") + "/mcp", "/health")):
        refused = httpx.post(url, json=chat, headers={"Accept": "application/json, text/event-stream"}, timeout=60)
        assert refused.status_code == 401, (url, refused.text)
        assert refused.headers["www-authenticate"].startswith('Bearer realm="kaos"'), url
        wrong = httpx.post(url, json=chat, headers=bearer("not-a-key"), timeout=60)
        assert wrong.status_code == 401 and 'error="invalid_token"' in wrong.headers["www-authenticate"], url
        base = url.rsplit("/", 3)[0] if "/v1/" in url else url.rsplit("/", 1)[0]
        assert httpx.get(base + probe, timeout=30).status_code == 200, base + probe


def test_the_network_works_with_each_agents_own_credential(plane, mock_model):
    mock_model.reset()
    mock_model.script([
        fenced("delegate", {"agent": "worker", "task": "Shout quiet"}),  # the coordinator
        fenced("tool_call", {"tool": "shout", "arguments": {"message": "quiet"}}),  # the worker
        "The worker shouted QUIET.",
        "Done: QUIET.",
    ])
    url = plane.url("agent", "coordinator")
    answer = httpx.post(url + "/v1/chat/completions", headers={**bearer(USER_KEY), "X-Session-ID": "secure-chain"},
                        json={"messages": [{"role": "user", "content": "get it shouted"}]}, timeout=120)
    assert answer.status_code == 200, answer.text
    assert answer.json()["choices"][0]["message"]["content"] == "Done: QUIET."
    assert len(mock_model.requests()) == 4, "every model call went through the guarded ModelAPI"
    events = httpx.get(url + "/memory/events", params={"session_id": "secure-chain"}, headers=bearer(USER_KEY),
                       timeout=30).json()["events"]
    assert [e["event_type"] for e in events] == ["user_message", "delegation_request", "delegation_response",
                                                 "agent_response"]
    worker = httpx.get(plane.url("agent", "worker") + "/memory/events", params={"event_type": "tool_result"},
                       headers=bearer(USER_KEY), timeout=30).json()["events"]  # the worker's admin reads all
    assert [e["content"] for e in worker] == [{"tool": "shout", "result": "QUIET"}]
    # Another key (key:4) reads neither session: the coordinator's is USER_KEY's, the worker's the
    # person's relayed by the coordinator (key:1 via key:2), not even the coordinator's key's own.
    other = httpx.get(url + "/memory/events", params={"session_id": "secure-chain"}, headers=bearer(TRIGGER_TOKEN),
                      timeout=30)
    assert (other.status_code, other.json()) == (404, {"detail": "no session 'secure-chain'"})
    for key in (TRIGGER_TOKEN, COORDINATOR_TOKEN):
        assert httpx.get(plane.url("agent", "worker") + "/memory/events", params={"event_type": "tool_result"},
                         headers=bearer(key), timeout=30).json()["events"] == []


def test_a_trigger_runs_with_its_credentials_and_without_them_fails_saying_what_to_set(plane, mock_model):
    mock_model.reset()

    def trigger(name: str, **spec) -> dict:
        return {"apiVersion": "kaos.tools/v1alpha1", "kind": "Trigger", "metadata": {"name": name, "namespace": NS},
                "spec": {"agent": "worker", "schedule": "0 0 1 1 *", "message": "Report.", **spec}}

    plane.client.apply([(trigger("keyed", credentials={"secretKeyRef": {"name": "trigger-token", "key": "token"}}),
                         "triggers.yaml"), (trigger("unkeyed"), "triggers.yaml")])
    runs = {}
    for name in ("keyed", "unkeyed"):
        plane.phase("Trigger", name, "Ready", timeout=30)
        started = plane.client.run_trigger(name, NS)
        runs[name] = wait_until(lambda: (plane.status("Trigger", name).get("history") or [None])[-1], 60,
                                interval=0.2, what=f"the run of Trigger {name}")
        assert runs[name]["runId"] == started["runId"]
    assert (runs["keyed"]["outcome"], runs["keyed"]["summary"]) == ("Succeeded", "echo: Report.")
    events = httpx.get(plane.url("agent", "worker") + "/memory/events", headers=bearer(USER_KEY), timeout=30,
                       params={"session_id": runs["keyed"]["sessionId"], "event_type": "user_message"}).json()["events"]
    assert [e["content"] for e in events] == ["Report."]
    assert runs["unkeyed"]["outcome"] == "Failed"
    assert runs["unkeyed"]["summary"].startswith(
        "the agent requires authentication (401): set spec.credentials.secretKeyRef to a Secret key holding")


def test_no_key_or_token_in_logs_statuses_memory_or_config_maps(plane):
    # Runs after the traffic above (module order).
    texts: dict[str, str] = {}
    for path in [plane.home / "controlplane.log", *sorted((plane.home / "logs").rglob("*.log"))]:
        texts[str(path)] = path.read_text(errors="replace")
    config_maps = [p for p in (plane.home / "volumes").rglob("*") if p.is_file()]
    assert any(p.name == "kaos_auth.py" for p in config_maps), "the Proxy's rendered ConfigMap is mounted"
    for path in config_maps:
        texts[str(path)] = path.read_text(errors="replace")
    for item in plane.client.resources(None, NS):
        texts[f"status of {item['kind']} {item['metadata']['name']}"] = json.dumps(item.get("status"))
    for agent in ("coordinator", "worker"):
        texts[f"memory of {agent}"] = httpx.get(plane.url("agent", agent) + "/memory/events", params={"limit": 1000},
                                                headers=bearer(USER_KEY), timeout=30).text
    assert any("shout" in text for text in texts.values()) and len(texts) > 8
    leaks = [(where, secret[:12]) for where, text in texts.items() for secret in PLANTED if secret in text]
    assert not leaks, leaks

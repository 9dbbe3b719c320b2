"""The agent's HTTP contract as OpenAPI (issue 12): the document at /openapi.json, every plain
route in it, real answers valid against it (JSON bodies and each event of a chat stream), and
schemathesis run against real agent processes (open, and with bearer auth) finding no 5xx, no
schema violation, no request the schema forbids accepted and none it allows refused."""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from kaos_runtime.core.settings import AgentSettings
from kaos_runtime.service.app import create_app
from kaos_runtime.service.routes.openapi import OPENAPI_PATH

from .conftest import agent_env

API_KEY = "openapi-key-1"
# Bounded so that each run takes seconds: ~300 requests over the 10 operations (coverage phase
# included); a fixed seed so that CI runs the same cases.
MAX_EXAMPLES = 40
SEED = "20261112"
# Extra query parameters and headers are ignored by design (clients and proxies add headers):
# schemathesis should not count them as requests to refuse.
# An approval id exists only while a call waits, so deciding one answers 404 to every id
# schemathesis makes up: for that operation, that is the answer, not missing test data.
CONFIG = ("[generation]\nallow-extra-parameters = false\n\n"
          "[[operations]]\ninclude-operation-id = \"decideApproval\"\nwarnings = false\n")
NOT_IN_THE_DOCUMENT = {"/a2a", "/mcp"}  # protocols of their own (A2A JSON-RPC, MCP), named in info


# Scripted replies: answers, and calls of a tool no server offers (an error event, then the next
# reply); once they are used up, answers saying that no model is configured. No model, no litellm.
SCRIPT = [reply for n in range(40) for reply in (
    f"Answer {n},\nscripted.", {"content": "", "tool_calls": [{"name": "missing_tool", "arguments": {"n": n}}]})]


@pytest.fixture(scope="module")
def agent(start):
    return start("agent", "openapi-agent", agent_env(
        "openapi-agent", AGENT_DESCRIPTION="Described by OpenAPI", DEBUG_MOCK_RESPONSES=SCRIPT))


@pytest.fixture(scope="module")
def guarded(start):
    return start("agent", "openapi-guarded", agent_env("openapi-guarded", AUTH_API_KEYS=API_KEY,
                                                       DEBUG_MOCK_RESPONSES=["A scripted answer."]))


@pytest.fixture(scope="module")
def document(agent) -> dict:
    response = httpx.get(agent.url + OPENAPI_PATH, timeout=10)
    assert response.status_code == 200 and response.headers["content-type"] == "application/json"
    return response.json()


def validator(document: dict, name: str) -> Draft202012Validator:
    registry = Registry().with_resource("urn:kaos-agent", Resource.from_contents(document, DRAFT202012))
    return Draft202012Validator({"$ref": f"urn:kaos-agent#/components/schemas/{name}"}, registry=registry)


def assert_valid(document: dict, name: str, instance) -> None:
    errors = [error.message for error in validator(document, name).iter_errors(instance)]
    assert not errors, (name, errors, instance)


def test_every_plain_route_is_described():
    app = create_app(AgentSettings.from_env({"AGENT_NAME": "x"}))
    routes = {route.path for route in app.router.routes} - NOT_IN_THE_DOCUMENT
    document = app.openapi()
    assert set(document["paths"]) == routes
    assert [route.path for route in app.router.routes].count(OPENAPI_PATH) == 1  # FastAPI's own is gone
    assert app.openapi() is document  # built once
    for name, schema in document["components"]["schemas"].items():
        Draft202012Validator.check_schema(schema)


def test_the_document_names_the_agent_and_no_security_when_open(document):
    assert document["openapi"] == "3.1.0"
    assert document["info"]["title"] == "KAOS agent openapi-agent"
    assert "Described by OpenAPI" in document["info"]["description"]
    assert "securitySchemes" not in document["components"]
    chat = document["paths"]["/v1/chat/completions"]["post"]
    assert set(chat["responses"]) == {"200", "400", "403", "413", "415", "429", "503"}
    assert set(chat["responses"]["200"]["content"]) == {"application/json", "text/event-stream"}


def test_with_auth_the_document_is_open_and_declares_the_bearer_scheme(guarded):
    document = httpx.get(guarded.url + OPENAPI_PATH, timeout=10).json()  # no token needed
    assert document["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    paths = document["paths"]
    assert paths["/v1/chat/completions"]["post"]["security"] == [{"bearer": []}]
    assert "401" in paths["/memory/events"]["get"]["responses"]
    refusals = {(path, method, status) for path, method, status in (
        ("/v1/chat/completions", "post", "404"), ("/memory/events", "get", "404"), ("/approvals", "get", "403"),
        ("/approvals/{approval_id}", "post", "403")) if status in paths[path][method]["responses"]}
    assert len(refusals) == 4  # the ownership and approver rules' answers
    assert paths["/health"]["get"]["security"] == [] and paths[OPENAPI_PATH]["get"]["security"] == []
    assert httpx.get(guarded.url + "/memory/events", timeout=10).status_code == 401


def test_real_answers_match_the_document(agent, document):
    body = {"model": "m", "messages": [{"role": "user", "content": "hello"}]}
    answer = httpx.post(agent.url + "/v1/chat/completions", json=body, headers={"X-Session-ID": "openapi s1"},
                        timeout=60)
    assert answer.status_code == 200 and answer.headers["x-session-id"] == "openapi s1"
    assert_valid(document, "ChatCompletion", answer.json())
    stream = httpx.post(agent.url + "/v1/chat/completions", timeout=60, json={
        **body, "stream": True, "stream_options": {"include_usage": True}})
    assert stream.headers["content-type"].startswith("text/event-stream")
    frames = [line[len("data: "):] for line in stream.text.split("\n") if line.startswith("data: ")]
    assert frames[-1] == "[DONE]" and len(frames) >= 4
    for frame in frames:
        assert_valid(document, "ChatStreamEvent", {"data": frame, "event": "message"})
    for frame in frames[:-1]:
        assert_valid(document, "ChatCompletionChunk", json.loads(frame))
    assert json.loads(frames[-2])["choices"] == [] and "usage" in json.loads(frames[-2])
    for path, name in [("/memory/events", "MemoryEvents"), ("/memory/sessions", "Sessions"),
                       ("/v1/models", "ModelList"), ("/health", "Health"), ("/ready", "Ready"),
                       ("/.well-known/agent", "AgentCard"), ("/.well-known/agent-card.json", "A2AAgentCard")]:
        response = httpx.get(agent.url + path, timeout=10)
        assert response.status_code == 200, path
        assert_valid(document, name, response.json())
    for bad in ({"messages": []}, {"messages": [{"role": "user"}], "session_id": "tab\there"}):
        refused = httpx.post(agent.url + "/v1/chat/completions", json=bad, timeout=10)
        assert refused.status_code == 400
        assert_valid(document, "Error", refused.json())
    assert httpx.get(agent.url + "/memory/events?limit=%2B5", timeout=10).status_code == 400
    assert httpx.get(agent.url + "/metrics", timeout=10).headers["content-type"].startswith("text/plain")


def run_schemathesis(url: str, tmp_path, *extra: str, config: str = CONFIG) -> str:
    """One worker: with two, its threads parse lambdas' source (hypothesis) at once, and CPython
    3.11.7's ast.parse is not safe for that ("SystemError: AST constructor recursion depth
    mismatch" broke a CI run)."""
    config_file = tmp_path / "schemathesis.toml"
    config_file.write_text(config)
    argv = [sys.executable, "-m", "schemathesis.cli", "--config-file", str(config_file), "run", url + OPENAPI_PATH,
            "--checks", "all", "--max-examples", str(MAX_EXAMPLES), "--seed", SEED, "--workers", "1",
            "--request-timeout", "20", "--generation-database", "none", "--no-color", "--output-sanitize", "false",
            *extra]
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=120)  # cwd: its caches
    output = done.stdout + done.stderr
    assert done.returncode == 0 and "No issues found" in output, output[-20000:]
    return output


def test_schemathesis_finds_nothing(agent, document, tmp_path):
    output = run_schemathesis(agent.url, tmp_path)
    # every operation but GET /openapi.json, which schemathesis leaves out (the schema's own URL)
    assert f"Tested: {len(document['paths']) - 1}\n" in output, output


def test_schemathesis_finds_nothing_with_auth(guarded, document, tmp_path):
    output = run_schemathesis(guarded.url, tmp_path, "-H", f"Authorization: Bearer {API_KEY}")
    assert f"Tested: {len(document['paths']) - 1}\n" in output, output

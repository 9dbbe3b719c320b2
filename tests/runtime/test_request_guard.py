"""What a request must be (core/request_guard.py), on real processes: every route that changes
something (chat completions, /approvals/{id}, /a2a, /mcp, the python-string MCP server's /mcp)
takes JSON only (415) and no browser request from another site (403); every route's body is
bounded (413, chunked too) and the KAOS headers are checked (400), before any work is done."""

from __future__ import annotations

import json

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.helpers.proto_helpers import new_text_message
from a2a.types import Role, SendMessageRequest, TaskState

from kaos_runtime.core.request_guard import cross_site, is_json

from .conftest import agent_env, events

LIMIT = 4096
CHAT = {"model": "x", "messages": [{"role": "user", "content": "hi"}]}
A2A_SEND = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {
    "role": "user", "messageId": "m1", "parts": [{"kind": "text", "text": "hi"}]}}}
MCP_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
WRITES = [("/v1/chat/completions", CHAT), ("/approvals/nope", {"decision": "approve"}), ("/a2a", A2A_SEND),
          ("/mcp", MCP_LIST)]
MCP_ACCEPT = {"Accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def agent(start, mock_model):
    return start("agent", "guarded-door", agent_env("guarded-door", mock_model, MAX_REQUEST_BODY_BYTES=LIMIT))


@pytest.fixture(scope="module")
def tools(start):
    return start("mcp", "guarded-tools", {"MCP_TOOLS_STRING": 'def echo(text: str) -> str:\n    return text\n'})


@pytest.fixture(autouse=True)
def clean_model(mock_model):
    mock_model.reset()


@pytest.fixture
def nothing_done(agent, mock_model):
    """Checks, when called, that the test made no model call and recorded no event."""
    before = events(agent)["total"]

    def check() -> None:
        assert mock_model.requests() == []
        assert events(agent)["total"] == before

    return check


def post(url: str, body, **headers) -> httpx.Response:
    return httpx.post(url, content=json.dumps(body).encode(), headers={**MCP_ACCEPT, **headers}, timeout=30)


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded",
                                          "multipart/form-data; boundary=x", None])
def test_a_write_that_is_not_json_is_415_on_every_route(agent, tools, nothing_done, content_type):
    headers = {"Content-Type": content_type} if content_type else {}
    for url in [agent.url + path for path, _ in WRITES] + [tools.url + "/mcp"]:
        body = dict(WRITES)[url.removeprefix(agent.url)] if url.startswith(agent.url) else MCP_LIST
        answer = httpx.post(url, content=json.dumps(body).encode(), headers={**MCP_ACCEPT, **headers}, timeout=30)
        assert answer.status_code == 415, (url, answer.text)
        assert answer.json()["detail"].startswith("Content-Type must be application/json"), url
    nothing_done()


def test_json_with_parameters_is_json(agent):
    answer = post(agent.url + "/v1/chat/completions", CHAT, **{"Content-Type": "Application/JSON; charset=utf-8"})
    assert answer.status_code == 200, answer.text


@pytest.mark.parametrize("headers", [
    {"Origin": "http://evil.example"}, {"Origin": "null"}, {"Sec-Fetch-Site": "cross-site"},
    {"Sec-Fetch-Site": "same-site"}, {"Origin": "http://evil.example", "Sec-Fetch-Site": "same-origin"},
])
def test_a_browser_write_from_another_site_is_403_on_every_route(agent, tools, nothing_done, headers):
    for url, body in [(agent.url + path, body) for path, body in WRITES] + [(tools.url + "/mcp", MCP_LIST)]:
        answer = post(url, body, **{"Content-Type": "application/json", **headers})
        assert answer.status_code == 403, (url, answer.text)
        assert answer.json()["detail"].startswith("cross-site request refused"), url
    nothing_done()


def test_same_origin_browser_writes_and_other_clients_pass(agent, tools):
    host = agent.url.removeprefix("http://")
    for headers in [{}, {"Origin": agent.url, "Sec-Fetch-Site": "same-origin"}, {"Sec-Fetch-Site": "none"},
                    {"Origin": "https://" + host.upper()},  # the scheme is not compared (TLS ends at a proxy)
                    # through a gateway: the client reached the gateway's host
                    {"Origin": "http://gateway.example:8080", "X-Forwarded-Host": "gateway.example:8080"}]:
        answer = post(agent.url + "/v1/chat/completions", CHAT, **{"Content-Type": "application/json", **headers})
        assert answer.status_code == 200, (headers, answer.text)
    same = post(tools.url + "/mcp", MCP_LIST, **{"Content-Type": "application/json", "Origin": tools.url})
    assert same.status_code == 200 and "echo" in same.text
    # reads are not writes: a cross-site GET is answered (without CORS headers the page cannot read it)
    assert httpx.get(agent.url + "/memory/sessions", headers={"Origin": "http://evil.example"}).status_code == 200


def test_a_write_no_route_takes_is_still_the_routes_answer(agent, tools):
    for url in (agent.url + "/health", tools.url + "/health"):
        assert httpx.post(url, content=b"x", headers={"Content-Type": "text/plain"}).status_code == 405
    assert httpx.put(agent.url + "/memory/events", headers={"Origin": "http://evil.example"}).status_code == 405


def test_cross_site_rule():
    assert cross_site(None, None, b"h:1") is None
    assert cross_site(b"same-origin", b"http://h:1", b"h:1") is None
    assert cross_site(b"none", None, None) is None
    assert cross_site(b"cross-site", None, b"h:1").startswith("cross-site")
    assert cross_site(None, b"http://h:2", b"h:1").startswith("cross-site")
    assert cross_site(None, b"http://h:1", None).startswith("cross-site")  # no Host to compare with
    assert cross_site(None, b"h:1", b"h:1").startswith("cross-site")  # not an origin
    assert is_json(b"application/json") and is_json(b"application/json;charset=utf-8")
    assert not is_json(b"application/jsonx") and not is_json(b"text/plain") and not is_json(None)


def chunks(size: int):
    for _ in range(size // 1024):
        yield b" " * 1024


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/approvals/nope", "/a2a", "/mcp"])
def test_every_route_bounds_its_body(agent, nothing_done, path):
    whole = httpx.post(agent.url + path, content=b" " * (LIMIT * 4), timeout=30,
                       headers={"Content-Type": "application/json", **MCP_ACCEPT})
    assert whole.status_code == 413 and "MAX_REQUEST_BODY_BYTES" in whole.json()["detail"], whole.text
    chunked = httpx.post(agent.url + path, content=chunks(LIMIT * 4), timeout=30,
                         headers={"Content-Type": "application/json", **MCP_ACCEPT})
    assert chunked.status_code == 413 and "MAX_REQUEST_BODY_BYTES" in chunked.json()["detail"], chunked.text
    nothing_done()


def test_a_chunked_body_under_the_bound_is_read_whole(agent):
    body = json.dumps(CHAT).encode()
    answer = httpx.post(agent.url + "/v1/chat/completions", content=iter([body[:10], body[10:]]), timeout=30,
                        headers={"Content-Type": "application/json"})
    assert answer.status_code == 200 and answer.json()["choices"][0]["message"]["content"] == "echo: hi"


@pytest.mark.parametrize("header, value", [
    ("X-Session-ID", "s" * 20_000), ("X-Session-ID", "s" * 129), ("X-Session-ID", "tab\there"),
    ("X-KAOS-Delegated-By", "a" * 129), ("X-KAOS-Trigger", "t" * 5000),
    ("X-KAOS-Delegation-Depth", "9" * 11), ("X-KAOS-Max-Steps", "0"), ("X-KAOS-Max-Tokens", "many"),
])
def test_a_bad_kaos_header_is_400_before_any_work_on_every_route(agent, nothing_done, header, value):
    for path, body in WRITES:
        answer = post(agent.url + path, body, **{"Content-Type": "application/json", header: value})
        assert answer.status_code == 400 and header in answer.json()["detail"], (path, answer.text)
        assert len(answer.content) < 400  # the value is not echoed
    nothing_done()


def test_a_session_id_of_128_characters_is_one(agent):
    session = "s" * 128
    answer = post(agent.url + "/v1/chat/completions", CHAT, **{"Content-Type": "application/json",
                                                               "X-Session-ID": session})
    assert answer.status_code == 200 and answer.headers["x-session-id"] == session
    too_long = post(agent.url + "/v1/chat/completions", {**CHAT, "session_id": "s" * 129},
                    **{"Content-Type": "application/json"})
    assert too_long.status_code == 400 and "at most 128" in too_long.json()["detail"]


async def test_an_a2a_context_id_that_is_no_session_id_fails_the_task_before_any_work(agent, nothing_done):
    async with httpx.AsyncClient(timeout=30) as http:
        client = await create_client(agent.url, ClientConfig(streaming=False, httpx_client=http))
        message = new_text_message("hi", context_id="c" * 500, role=Role.ROLE_USER)
        answers = [answer async for answer in client.send_message(SendMessageRequest(message=message))]
    task = answers[-1].task
    assert task.status.state == TaskState.TASK_STATE_FAILED
    assert "contextId must be at most 128" in task.status.message.parts[0].text
    nothing_done()

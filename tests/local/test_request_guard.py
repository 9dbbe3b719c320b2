"""The request guard (kaos.request_guard): which Host, which site and which body type a server
that a browser can reach accepts; the rule alone, then as ASGI middleware over HTTP."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest
import uvicorn

from kaos.local.ports import free_port
from kaos.request_guard import Policy, RequestGuard, parse_host, refusal
from tests.support.polling import eventually

PORT = 8080
POLICY = Policy(hosts=("kaos.example", "tunnel:9000"), port=PORT, hint="allow it with --allow-host",
                any_body=lambda path: path.endswith("/trigger/nightly"))
JSON = (b"content-type", b"application/json")


def headers(**named: str) -> list[tuple[bytes, bytes]]:
    return [(name.replace("_", "-").encode(), value.encode()) for name, value in named.items()]


def status(method: str, *pairs, path: str = "/default/agent/a/v1/chat/completions", policy: Policy = POLICY):
    refused = refusal(method, path, [*pairs], policy)
    return None if refused is None else refused.status


@pytest.mark.parametrize("host", ["127.0.0.1:8080", "127.0.0.1", "localhost:8080", "LOCALHOST", "[::1]:8080",
                                  "[::1]", "kaos.example", "kaos.example:8080", "tunnel:9000"])
def test_the_loopback_names_and_the_allowed_ones_are_served(host):
    assert status("GET", *headers(host=host)) is None
    assert status("POST", *headers(host=host), JSON) is None


@pytest.mark.parametrize("host", ["rebind.test:8080", "rebind.test", "127.0.0.1:9999", "localhost:80", "tunnel",
                                  "tunnel:9001", "kaos.example:9000", "127.0.0.2:8080", "", "a b", "localhost.:8080"])
def test_any_other_host_is_misdirected_even_for_a_get(host):
    refused = refusal("GET", "/_console/api/resources", headers(host=host) if host else [], POLICY)
    assert refused.status == 421
    assert repr(host) in refused.detail and "allow it with --allow-host" in refused.detail
    assert "DNS rebinding" in refused.detail


def test_a_policy_without_hosts_takes_any_host():
    assert status("GET", *headers(host="console.cluster.example"), policy=Policy(hosts=None)) is None


@pytest.mark.parametrize("site", ["cross-site", "same-site"])
def test_a_request_from_another_site_is_forbidden(site):
    host = headers(host="127.0.0.1:8080")
    assert status("POST", *host, JSON, *headers(sec_fetch_site=site)) == 403
    assert status("GET", *host, *headers(sec_fetch_site=site, sec_fetch_mode="cors")) == 403, "no cross-site reads"
    assert status("OPTIONS", *host, *headers(sec_fetch_site=site, sec_fetch_mode="cors")) == 403, "no preflight"
    form = headers(sec_fetch_site=site, sec_fetch_mode="navigate", content_type="application/x-www-form-urlencoded")
    assert status("POST", *host, *form) == 403, "a form posted from another site"
    assert status("GET", *host, *headers(sec_fetch_site=site, sec_fetch_mode="navigate")) is None, \
        "a link from elsewhere still opens the console"


@pytest.mark.parametrize("site", ["same-origin", "none"])
def test_the_same_origin_and_the_user_are_served(site):
    assert status("POST", *headers(host="127.0.0.1:8080", sec_fetch_site=site), JSON) is None


@pytest.mark.parametrize("origin", ["http://evil.example", "http://127.0.0.1:9999", "null", "http://localhost:8080",
                                    "garbage"])
def test_an_origin_that_is_not_the_requests_own_is_forbidden(origin):
    assert status("POST", *headers(host="127.0.0.1:8080", origin=origin), JSON) == 403
    assert status("GET", *headers(host="127.0.0.1:8080", origin=origin)) == 403


def test_the_requests_own_origin_is_served_whatever_its_scheme():
    assert status("POST", *headers(host="127.0.0.1:8080", origin="http://127.0.0.1:8080"), JSON) is None
    assert status("POST", *headers(host="kaos.example", origin="https://kaos.example"), JSON) is None


@pytest.mark.parametrize("content_type", [None, "text/plain", "text/plain;charset=UTF-8", "multipart/form-data; b=x",
                                          "application/x-www-form-urlencoded", "application/jsonp"])
def test_a_state_changing_request_must_be_json(content_type):
    host = headers(host="127.0.0.1:8080", content_length="2")
    body_type = headers(content_type=content_type) if content_type else []
    for method in ("POST", "PUT", "PATCH", "DELETE"):
        refused = refusal(method, "/_kaos/apply", [*host, *body_type], POLICY)
        assert refused.status == 415, (method, content_type)
        assert "application/json" in refused.detail
    assert status("GET", *host, *body_type) is None


@pytest.mark.parametrize("content_type", ["application/json", "Application/JSON; charset=utf-8"])
def test_json_is_accepted(content_type):
    assert status("POST", *headers(host="127.0.0.1:8080", content_type=content_type)) is None


def test_a_trigger_webhook_takes_any_body_but_not_from_another_site():
    signed = headers(host="127.0.0.1:8080", content_type="application/x-www-form-urlencoded")
    assert status("POST", *signed, path="/team/trigger/nightly") is None
    assert status("POST", *signed, *headers(sec_fetch_site="cross-site"), path="/team/trigger/nightly") == 403
    assert status("POST", *signed, *headers(origin="http://evil.example"), path="/team/trigger/nightly") == 403


def test_a_delete_without_a_body_needs_no_type():
    """An MCP client ends its session with one (a browser cannot send one cross-site without a preflight)."""
    assert status("DELETE", *headers(host="127.0.0.1:8080")) is None
    assert status("DELETE", *headers(host="127.0.0.1:8080", content_length="0")) is None
    assert status("DELETE", *headers(host="127.0.0.1:8080", transfer_encoding="chunked")) == 415
    assert status("POST", *headers(host="127.0.0.1:8080")) == 415, "a POST without a body is not exempt"


@pytest.mark.parametrize("text, parsed", [("Kaos.Example", ("kaos.example", None)), ("tunnel:9000", ("tunnel", 9000)),
                                          ("[::1]:8080", ("[::1]", 8080)), ("10.0.0.1", ("10.0.0.1", None))])
def test_host_entries(text, parsed):
    assert parse_host(text) == parsed


@pytest.mark.parametrize("text", ["http://x", "x:0", "x:70000", "-x", "x/y", "", "a..b", "x:"])
def test_bad_host_entries_say_what_is_wrong(text):
    with pytest.raises(ValueError, match="not a host name"):
        parse_host(text)


def test_the_rule_costs_microseconds():
    """It runs before every request of the gateway: a chat's headers, checked 20,000 times."""
    chat = [(b"host", b"127.0.0.1:8080"), (b"user-agent", b"python-httpx/0.28"), (b"accept", b"*/*"),
            (b"accept-encoding", b"gzip"), (b"connection", b"keep-alive"), (b"content-length", b"120"), JSON,
            (b"authorization", b"Bearer k"), (b"x-session-id", b"s1")]
    start = time.perf_counter()
    for _ in range(20_000):
        assert refusal("POST", "/default/agent/a/v1/chat/completions", chat, POLICY) is None
    assert (time.perf_counter() - start) / 20_000 < 50e-6


# as middleware, over HTTP


async def echo(scope, receive, send):
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"served"})


@pytest.fixture
async def guarded_server():
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(RequestGuard(echo, Policy(hosts=(), port=port, hint="say how")),
                                           host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    task = asyncio.create_task(server.serve())
    await eventually(lambda: server.started, 10, interval=0.01, what="the guarded server")
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    await task


async def test_the_middleware_answers_refusals_in_json_and_serves_the_rest(guarded_server):
    async with httpx.AsyncClient(base_url=guarded_server) as http:
        assert (await http.post("/x", json={})).text == "served"
        plain = await http.post("/x", content=b"{}", headers={"content-type": "text/plain"})
        assert plain.status_code == 415 and plain.json()["error"] == "unsupported media type"
        rebound = await http.get("/x", headers={"host": "rebind.test"})
        assert rebound.status_code == 421 and "say how" in rebound.json()["detail"]
        foreign = await http.post("/x", json={}, headers={"origin": "http://evil.example"})
        assert foreign.status_code == 403 and foreign.headers["content-type"] == "application/json"

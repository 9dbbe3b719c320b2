"""Delegation over A2A (issue 12): a KAOS coordinator delegates to agents it knows only by URL
(A2A_PEER_URLS): a plain a2a-sdk agent (tests/support/a2a_agent.py) speaking A2A 1.0, one
speaking 0.3 whose card has no name, and a KAOS agent with API keys. All real processes; the
memory events are compared with those of a KAOS-to-KAOS delegation by the same coordinator."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from kaos_runtime.clients.a2a_peer import A2APeers, derived_name
from kaos_runtime.core.settings import AgentSettings, ConfigError
from tests.support.processes import free_port, spawn, wait_until_ok

from .conftest import agent_env, chat, events
from .test_delegation import delegate_block

TOKEN = "coordinator-key-1"


class Cards:
    """Stands in for the HttpClient: serves the given cards, 404 for anything else."""

    def __init__(self, cards: dict) -> None:
        self.cards = cards

    async def request(self, method, url, **_):
        return (200, json.dumps(self.cards[url]).encode()) if url in self.cards else (404, b"")


def test_a2a_peer_urls_setting():
    config = AgentSettings.from_env({"A2A_PEER_URLS": "http://a:1, https://b.example.com/x/\nhttp://a:1"})
    assert config.a2a_peers == ("http://a:1", "https://b.example.com/x/")
    with pytest.raises(ConfigError, match="A2A_PEER_URLS must hold http"):
        AgentSettings.from_env({"A2A_PEER_URLS": "agents.example.com"})


def test_names_from_cards_else_derived_from_the_url():
    assert derived_name("https://Agents.example.com/travel/.well-known/agent-card.json") == "agents-example-com-travel"
    assert derived_name("http://127.0.0.1:9311/") == "127-0-0-1-9311"
    peers = A2APeers(("http://a:1", "http://b:2", "http://c:3/.well-known/agent-card.json", "http://d:4"), Cards({
        "http://a:1/.well-known/agent-card.json": {"name": "worker"},  # a KAOS peer's name already
        "http://b:2/.well-known/agent.json": {"name": "bee", "description": "older card path"},
        "http://c:3/.well-known/agent-card.json": {"name": " bee "},  # taken by the one before
    }), timeout=1, card_timeout=1, taken=frozenset({"worker"}))
    assert list(peers.by_name()) == ["a-1", "b-2", "c-3", "d-4"] and not peers.complete
    asyncio.run(peers.fetch_missing())
    assert list(peers.by_name()) == ["a-1", "bee", "c-3", "d-4"] and not peers.complete  # d has no card
    assert peers.get("b-2") is peers.get("bee")  # the derived name keeps reaching it
    assert peers.describe()[1] == {"name": "bee", "description": "older card path"}


def plain_agent(log_dir, name: str, **env):
    service = spawn(name, ["-m", "tests.support.a2a_agent"], env, log_dir)
    wait_until_ok(service)
    return service


def received(agent) -> dict:
    return httpx.get(agent.url + "/_received", timeout=10).json()


def port_of(service) -> int:
    return int(service.url.rsplit(":", 1)[1])


@pytest.fixture(scope="module")
def capitals(log_dir):
    service = plain_agent(log_dir, "plain-a2a", A2A_AGENT_NAME="capitals")
    yield service
    service.stop()


@pytest.fixture(scope="module")
def legacy(log_dir):
    service = plain_agent(log_dir, "legacy-a2a", A2A_AGENT_NAME="", A2A_PROTOCOL="0.3")
    yield service
    service.stop()


def coordinator(start, name: str, replies: list, **env):
    return start("agent", name, agent_env(name, DEBUG_MOCK_RESPONSES=replies, AUTH_OUTBOUND_TOKEN=TOKEN, **env))


def session_events(agent, session: str) -> list[dict]:
    return events(agent, session_id=session)["events"]


def shape(recorded: list[dict]) -> list[tuple]:
    """Each event's type, the keys of its content (or the content's type) and of its metadata."""
    return [(e["event_type"], sorted(e["content"]) if isinstance(e["content"], dict) else type(e["content"]).__name__,
             sorted(e["metadata"])) for e in recorded]


def test_a2a_delegation_answers_and_records_what_a_kaos_delegation_records(start, capitals):
    worker = start("agent", "kaos-named-worker", agent_env("kaos-named-worker", DEBUG_MOCK_RESPONSES=["one two three"]))
    coord = coordinator(start, "a2a-coord", [
        delegate_block("kaos-named-worker", "Count to three"), "The KAOS worker counted.",
        delegate_block("capitals", "count to three"), "The A2A agent counted.",
    ], PEER_AGENTS="kaos-named-worker",
        PEER_AGENT_KAOS_NAMED_WORKER_CARD_URL=worker.url + "/.well-known/agent", A2A_PEER_URLS=capitals.url)
    assert httpx.get(coord.url + "/ready", timeout=10).json()["peers_discovered"] is True
    assert "task_delegation" in httpx.get(coord.url + "/.well-known/agent", timeout=10).json()["capabilities"]

    by_kaos = chat(coord, "count, KAOS", session_id="kaos")
    by_a2a = chat(coord, "count, A2A", session_id="a2a")
    assert by_kaos.status_code == by_a2a.status_code == 200
    assert by_a2a.json()["choices"][0]["message"]["content"] == "The A2A agent counted."

    kaos, a2a = session_events(coord, "kaos"), session_events(coord, "a2a")
    assert [e["event_type"] for e in a2a] == ["user_message", "delegation_request", "delegation_response",
                                              "agent_response"]
    assert shape(a2a) == shape(kaos)
    assert a2a[1]["content"] == {"agent": "capitals", "task": "count to three"}
    assert a2a[2]["content"] == {"agent": "capitals", "response": "A2A done: COUNT TO THREE"}
    assert kaos[2]["content"] == {"agent": "kaos-named-worker", "response": "one two three"}
    # the depth header and the coordinator's own credential went with the A2A message
    [got] = [r for r in received(capitals)["received"] if r["text"] == "count to three"]
    assert (got["text"], got["depth"], got["authorization"]) == ("count to three", "1", f"Bearer {TOKEN}")


def test_an_a2a_0_3_agent_without_a_name_by_its_card_url(start, legacy):
    derived = f"127-0-0-1-{port_of(legacy)}"  # the card has no name: host and port
    coord = coordinator(start, "legacy-coord", [delegate_block(derived, "old protocol"), "Done."],
                        A2A_PEER_URLS=legacy.url + "/.well-known/agent-card.json")
    assert chat(coord, "use the old one", session_id="s").status_code == 200
    responses = events(coord, session_id="s", event_type="delegation_response")["events"]
    assert [e["content"] for e in responses] == [{"agent": derived, "response": "A2A done: OLD PROTOCOL"}]
    assert "message/send" in received(legacy)["methods"]  # A2A 0.3's method, as the card says


def test_a_kaos_agent_by_url_gets_the_depth_the_credential_and_the_person(start, log_dir):
    admin = "kaos-by-url-admin-key"
    remote = start("agent", "kaos-by-url", agent_env("kaos-by-url", AUTH_API_KEYS=f"{TOKEN},{admin}",
                                                      AUTH_ADMINS="key:2", DEBUG_MOCK_RESPONSES=["answered over A2A"]))
    coord = coordinator(start, "url-coord", [delegate_block("kaos-by-url", "Remote task"), "Done."],
                        A2A_PEER_URLS=remote.url)  # the card is public; the message needs the key
    assert chat(coord, "ask the remote one", session_id="r").status_code == 200
    response = events(coord, session_id="r", event_type="delegation_response")["events"]
    assert response[0]["content"] == {"agent": "kaos-by-url", "response": "answered over A2A"}
    remote_events = httpx.get(remote.url + "/memory/events", headers={"Authorization": f"Bearer {admin}"},
                              timeout=10).json()["events"]
    assert [(e["content"], e["metadata"]["depth"]) for e in remote_events if e["event_type"] == "user_message"] == [
        ("Remote task", 1)]
    # the session is the person's (the open coordinator's anonymous caller, signed over A2A for the
    # card's name), not the coordinator key's own
    assert httpx.get(remote.url + "/memory/sessions", headers={"Authorization": f"Bearer {TOKEN}"},
                     timeout=10).json()["sessions"] == []


def test_a2a_failures_take_the_delegation_error_path(start, capitals):
    gone = f"http://127.0.0.1:{free_port()}"
    coord = coordinator(start, "failing-coord", [
        delegate_block("capitals", "please fail now"), "after the failure",
        delegate_block("capitals", "rpc error now"), "after the error",
        delegate_block(f"127-0-0-1-{gone.rsplit(':', 1)[1]}", "anyone there"), "after the silence",
    ], A2A_PEER_URLS=f"{capitals.url},{gone}")
    errors = {}
    for session in ("failed", "rpc", "down"):
        reply = chat(coord, f"try {session}", session_id=session)
        assert reply.status_code == 200
        recorded = session_events(coord, session)
        assert [e["event_type"] for e in recorded] == ["user_message", "delegation_request", "delegation_error",
                                                       "agent_response"]
        assert sorted(recorded[2]["content"]) == ["agent", "error", "task"]
        errors[session] = recorded[2]["content"]["error"]
    assert "did not complete the task (state failed): cannot do: please fail now" in errors["failed"]
    assert "answered with an error" in errors["rpc"] and "refusing: rpc error now" in errors["rpc"]
    assert errors["down"].startswith(f"cannot reach A2A agent 127-0-0-1-{gone.rsplit(':', 1)[1]} at {gone}")
    assert "Traceback" not in coord.log()

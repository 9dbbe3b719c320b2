"""`kaos memory list|search|forget`: the real CLI (kaos.cli.main) against an HTTP server on
127.0.0.1 that answers as an agent's /memory/long-term does behind the gateway (the runtime's
routes: docs/memory-store.md). It checks what the CLI sends (the path, q and limit, the bearer
token), what it prints, and its errors for a user's mistake. The same commands against a real
agent on `kaos up` are in e2e/test_memory_store.py (it needs the runtime's long-term memory)."""

from __future__ import annotations

import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from kaos.cli import main
from kaos.local.state import State, write_state

PATH = "/default/agent/helper/memory/long-term"
MEMORIES = [
    {"id": "mem-" + "a" * 32, "text": "The user's name is Ada.", "created_at": 1764331200.0, "session_id": "s1",
     "source": "extraction"},
    {"id": "mem-" + "b" * 32, "text": "Ada prefers tea to coffee.", "created_at": 1764331260.0, "session_id": "s1",
     "source": "tool"},
]


class AgentMemoryServer(ThreadingHTTPServer):
    """Answers GET/DELETE /memory/long-term of the agent default/helper as the runtime does, and
    records each request (method, path, query, Authorization)."""

    def __init__(self):
        super().__init__(("127.0.0.1", 0), Handler)
        self.memories = [dict(m) for m in MEMORIES]
        self.requests: list[dict] = []


class Handler(BaseHTTPRequestHandler):
    server: AgentMemoryServer

    def answer(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def record(self) -> tuple[str, dict]:
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        self.server.requests.append({"method": self.command, "path": url.path, "query": query,
                                     "authorization": self.headers.get("authorization")})
        return url.path, query

    def do_GET(self):
        path, query = self.record()
        if path != PATH:
            return self.answer(404, {"detail": "Not Found"})  # an agent without long-term memory
        if "q" in query:
            hits = [{**m, "distance": 0.1} for m in self.server.memories if "tea" in m["text"]]
            return self.answer(200, {"agent": "helper", "scope": "user", "query": query["q"], "memories": hits,
                                     "total": len(hits)})
        limit = int(query.get("limit", 100))
        return self.answer(200, {"agent": "helper", "scope": "user", "memories": self.server.memories[:limit],
                                 "total": len(self.server.memories)})

    def do_DELETE(self):
        path, _ = self.record()
        if self.headers.get("content-type") != "application/json":  # the agent's request guard
            given = self.headers.get("content-type") or "none"
            return self.answer(415, {"detail": f"Content-Type must be application/json (got {given})"})
        if path == PATH:
            count, self.server.memories = len(self.server.memories), []
            return self.answer(200, {"agent": "helper", "deleted": count, "total": count})
        memory_id = path.rsplit("/", 1)[-1]
        if not any(m["id"] == memory_id for m in self.server.memories):
            return self.answer(404, {"detail": f"no memory {memory_id}"})
        self.server.memories = [m for m in self.server.memories if m["id"] != memory_id]
        return self.answer(200, {"agent": "helper", "deleted": [memory_id], "total": 1})

    def log_message(self, *args):
        pass


@pytest.fixture
def agent(tmp_path, monkeypatch):
    server = AgentMemoryServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    home = tmp_path / "home"
    home.mkdir()
    # the CLI finds the gateway in the state file of a running control plane: this process
    write_state(home, State(os.getpid(), server.server_address[1], time.time(), "admin-token"))
    monkeypatch.setenv("KAOS_HOME", str(home))
    yield server
    server.shutdown()
    server.server_close()


def test_list_prints_each_memory_newest_first(agent, capsys):
    assert main(["memory", "list", "helper"]) == 0
    out = capsys.readouterr().out
    assert "ID" in out and "TEXT" in out
    assert "mem-" + "a" * 32 in out and "The user's name is Ada." in out and "2025-11-28 12:00:00" in out
    assert agent.requests[-1] == {"method": "GET", "path": PATH, "query": {"offset": "0"}, "authorization": None}


def test_search_sends_the_query_limit_and_token(agent, capsys):
    assert main(["memory", "search", "helper", "what does Ada drink", "--limit", "3", "--token", "t0k"]) == 0
    out = capsys.readouterr().out
    assert "Ada prefers tea" in out and "The user's name" not in out and "0.100" in out
    assert agent.requests[-1] == {"method": "GET", "path": PATH, "query": {"q": "what does Ada drink", "limit": "3"},
                                  "authorization": "Bearer t0k"}


def test_list_as_json(agent, capsys):
    assert main(["memory", "list", "helper", "-o", "json", "--limit", "1"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert [m["id"] for m in answer["memories"]] == ["mem-" + "a" * 32] and answer["total"] == 2


def test_forget_one_then_all(agent, capsys):
    assert main(["memory", "forget", "helper", "mem-" + "a" * 32]) == 0
    assert "forgot 1 memory" in capsys.readouterr().out
    assert agent.requests[-1]["method"] == "DELETE" and agent.requests[-1]["path"] == f"{PATH}/mem-{'a' * 32}"
    assert main(["memory", "forget", "helper", "--all", "--token", "t0k"]) == 0
    assert "forgot 1 memory" in capsys.readouterr().out
    assert agent.requests[-1] == {"method": "DELETE", "path": PATH, "query": {}, "authorization": "Bearer t0k"}
    assert agent.memories == []


def test_forgetting_an_unknown_id_says_so(agent, capsys):
    assert main(["memory", "forget", "helper", "mem-" + "c" * 32]) == 1
    assert f"no memory mem-{'c' * 32}" in capsys.readouterr().err


def test_an_agent_without_long_term_memory_is_named(agent, capsys):
    assert main(["memory", "list", "other"]) == 1
    err = capsys.readouterr().err
    assert "agent default/other" in err and "spec.memory.store" in err


@pytest.mark.parametrize("argv, message", [
    (["memory", "forget", "helper"], "give either a memory id"),
    (["memory", "forget", "helper", "mem-x", "--all"], "give either a memory id"),
    (["memory", "list", "Not_An_Agent"], "metadata.name"),
])
def test_a_users_mistake_is_a_clear_error(agent, capsys, argv, message):
    assert main(argv) == 1
    assert message in capsys.readouterr().err
    assert agent.requests == []


def test_a_limit_out_of_range_is_refused_by_the_parser(capsys):
    with pytest.raises(SystemExit):
        main(["memory", "list", "helper", "--limit", "0"])
    assert "is not a number from 1 to 1000" in capsys.readouterr().err

"""Long-term memory in real agent processes, with the real offline embedder over HTTP
(engines/embeddings_server.py) and real stores (a SQLite file; PostgreSQL with pgvector).

A fact told in one session is recalled in a new session by the same caller (the model is given
it), never for another caller, and is gone once forgotten; the store or the embedder stopped,
the agent still answers, and says it is degraded (/ready, /memory/long-term/status).
"""

from __future__ import annotations

import json

import httpx
import pytest

from kaos_runtime.service.routes.openapi import OPENAPI_PATH
from tests.support.polling import wait_until
from tests.support.postgres_server import PostgresServer
from tests.support.processes import spawn, wait_until_ok

from .conftest import agent_env, chat
from .test_openapi import CONFIG, assert_valid, run_schemathesis

ALICE, BOB, ADMIN = "alice-key-0123456789", "bob-key-0123456789", "admin-key-0123456789"


@pytest.fixture(scope="module")
def embedder(log_dir):
    service = spawn("embedder", ["-m", "kaos_runtime.engines.embeddings_server"], {}, log_dir)
    wait_until_ok(service, timeout=90)
    yield service
    service.stop()


def memory_env(name, model, embedder, store_url, **extra) -> dict:
    return agent_env(name, model, LONG_TERM_MEMORY_ENABLED="true", LONG_TERM_MEMORY_STORE_URL=store_url,
                     LONG_TERM_MEMORY_COLLECTION=f"test-{name}", LONG_TERM_MEMORY_EMBEDDING_URL=embedder.url,
                     LONG_TERM_MEMORY_EMBEDDING_MODEL="all-minilm-l6-v2", **extra)


def as_(key: str) -> dict:
    return {"Authorization": f"Bearer {key}"}


def forget(agent, key: str, memory_id: str = "") -> httpx.Response:
    """A DELETE is a write: JSON's Content-Type, as the request guard asks of every write."""
    path = "/memory/long-term" + (f"/{memory_id}" if memory_id else "")
    return httpx.delete(agent.url + path, headers={**as_(key), "Content-Type": "application/json"})


def memories(agent, key: str | None = None, **params) -> dict:
    response = httpx.get(agent.url + "/memory/long-term", params=params, headers=as_(key) if key else None, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()


def extracting(request: dict) -> bool:
    return "extract durable facts" in request["messages"][0]["content"]


def given_memories(model) -> list[str]:
    """The long-term memory system messages of the last chat request the model received."""
    chats = [r for r in model.requests() if r["messages"][0]["role"] == "system" and not extracting(r)]
    return [m["content"] for m in chats[-1]["messages"] if m["role"] == "system"
            and m["content"].startswith("Long-term memory:")]


@pytest.fixture(scope="module")
def agent(start, mock_model, embedder, tmp_path_factory):
    store = tmp_path_factory.mktemp("ltm") / "memories.db"
    return start("agent", "remembering", memory_env("remembering", mock_model, embedder, f"sqlite://{store}",
                                                   AUTH_API_KEYS=f"{ALICE},{BOB},{ADMIN}",
                                                   AUTH_ADMINS="key:3"))


def test_a_fact_told_once_is_recalled_in_a_new_session_for_that_caller_only(agent, mock_model):
    mock_model.reset()
    told = chat(agent, "Hello! My favourite colour is teal. What a day.", headers=as_(ALICE))
    assert told.status_code == 200, told.text
    session = told.headers["X-Session-ID"]
    stored = wait_until(lambda: memories(agent, ALICE)["memories"], 30, what="alice's fact stored")
    assert [m["text"] for m in stored] == ["My favourite colour is teal."]
    assert stored[0]["session_id"] == session and stored[0]["source"] == "extraction"
    assert memories(agent, BOB) == {"agent": "remembering", "scope": "user", "memories": [], "total": 0}
    kinds = [e["event_type"] for e in events_of(agent, ALICE, session)]
    assert "memory_stored" in kinds

    again = chat(agent, "What is my favourite colour?", headers=as_(ALICE))  # a new session
    assert again.status_code == 200 and again.headers["X-Session-ID"] != session
    assert any("- My favourite colour is teal." in text for text in given_memories(mock_model))
    recalled = [e for e in events_of(agent, ALICE, again.headers["X-Session-ID"]) if e["event_type"] == "memory_recalled"]
    assert recalled and recalled[0]["content"]["memories"][0]["text"] == "My favourite colour is teal."

    other = chat(agent, "What is my favourite colour?", headers=as_(BOB))
    assert other.status_code == 200
    assert given_memories(mock_model) == []  # bob's turn: nothing of alice's
    found = memories(agent, ALICE, q="which colour do I like")
    assert found["memories"][0]["text"] == "My favourite colour is teal." and found["query"]
    assert memories(agent, BOB, q="which colour do I like")["memories"] == []


def events_of(agent, key: str, session: str) -> list[dict]:
    response = httpx.get(agent.url + "/memory/events", params={"session_id": session}, headers=as_(key), timeout=10)
    assert response.status_code == 200, response.text
    return response.json()["events"]


def test_forgotten_is_gone_and_another_caller_cannot_forget_it(agent, mock_model):
    chat(agent, "Remember that my dog is called Biscuit.", headers=as_(ALICE))
    stored = wait_until(lambda: [m for m in memories(agent, ALICE)["memories"] if "Biscuit" in m["text"]], 30,
                        what="the dog's name stored")
    memory_id = stored[0]["id"]
    theirs = forget(agent, BOB, memory_id)
    assert theirs.status_code == 404 and memory_id in theirs.json()["detail"]
    mine = forget(agent, ALICE, memory_id)
    assert mine.status_code == 200 and mine.json()["deleted"] == [memory_id]
    assert all("Biscuit" not in m["text"] for m in memories(agent, ALICE)["memories"])
    everything = forget(agent, ALICE)
    assert everything.status_code == 200 and everything.json()["deleted"] >= 1
    assert memories(agent, ALICE)["total"] == 0
    mock_model.reset()
    chat(agent, "What is my favourite colour? And my dog's name?", headers=as_(ALICE))
    assert given_memories(mock_model) == []
    trail = httpx.get(agent.url + "/audit", headers=as_(ADMIN), timeout=30)
    assert trail.status_code == 200, trail.text
    forgotten = [e for e in trail.json()["events"] if e["action"] == "memory.forgotten"]
    assert [(e["user"], e["object"], e["owner"]) for e in forgotten] == [
        ("key:1", f"memory/long-term/{memory_id}", "key:1"), ("key:1", "memory/long-term", "key:1")]
    assert forgotten[0]["count"] == "1" and int(forgotten[1]["count"]) >= 1 and forgotten[0]["time"]
    logged = [json.loads(line) for line in agent.log().splitlines() if '"memory.forgotten"' in line]
    assert logged == forgotten  # the same events, one JSON line each in the agent's log


def test_the_model_remembers_and_recalls_with_its_tools(agent, mock_model):
    mock_model.reset()
    mock_model.script({"tool_calls": [{"name": "remember", "arguments": {"fact": "I am allergic to peanuts."}}]},
                      "Noted.")
    assert chat(agent, "Keep this in mind please.", headers=as_(BOB)).status_code == 200
    # The turn's fact extraction asks the same model, after the answer: done before the next script.
    wait_until(lambda: any(extracting(r) for r in mock_model.requests()), 30, what="the turn's extraction")
    mock_model.script({"tool_calls": [{"name": "recall", "arguments": {"query": "allergies"}}]}, "You are allergic.")
    assert [m["text"] for m in memories(agent, BOB)["memories"]] == ["I am allergic to peanuts."]
    assert memories(agent, BOB)["memories"][0]["source"] == "tool"
    assert chat(agent, "What am I allergic to?", headers=as_(BOB)).status_code == 200
    results = [m for r in mock_model.requests() for m in r["messages"] if m["role"] == "tool"]
    assert results[-1]["content"] == "- I am allergic to peanuts."
    assert memories(agent, ALICE, q="allergies")["memories"] == []


@pytest.mark.parametrize("path, params, status, message", [
    ("/memory/long-term", {"limit": "abc"}, 400, "limit"),
    ("/memory/long-term", {"limit": "5000"}, 400, "limit must be between 1 and 1000"),
    ("/memory/long-term", {"offset": "-1"}, 400, "offset must be a non-negative integer"),
    ("/memory/long-term", {"q": " "}, 400, "q must not be empty"),
    ("/memory/long-term", {"q": "x" * 2001}, 400, "at most 2000 characters"),
])
def test_bad_queries_are_4xx_with_a_message(agent, path, params, status, message):
    response = httpx.get(agent.url + path, params=params, headers=as_(ALICE))
    assert response.status_code == status and message in response.json()["detail"]


def test_a_search_with_the_largest_limit_answers_and_the_store_stays_ok(agent):
    """Found by schemathesis: q with limit 999 asked sqlite-vec for k = 9990 (> 4096): 503, degraded."""
    chat(agent, "Please note that my favourite number is seven.", headers=as_(BOB))
    wait_until(lambda: memories(agent, BOB)["memories"], 30, what="bob's fact stored (the vector table made)")
    found = httpx.get(agent.url + "/memory/long-term", params={"q": "anything", "limit": "1000"},
                      headers=as_(BOB), timeout=30)
    assert found.status_code == 200, found.text
    assert ready(agent)["status"] == "ok"


def test_a_bad_memory_id_is_400_and_no_credentials_401(agent):
    response = forget(agent, ALICE, "not-a-memory")
    assert response.status_code == 400 and "is not a memory id" in response.json()["detail"]
    assert httpx.get(agent.url + "/memory/long-term").status_code == 401


@pytest.fixture(scope="module")
def postgres():
    server = PostgresServer().start()
    yield server
    server.remove()


def ready(agent) -> dict:
    return httpx.get(agent.url + "/ready", timeout=10).json()["long_term_memory"]


def test_store_or_embedder_stopped_the_agent_answers_and_says_degraded(start, mock_model, log_dir, postgres):
    embedder = spawn("embedder-2", ["-m", "kaos_runtime.engines.embeddings_server"], {}, log_dir)
    wait_until_ok(embedder, timeout=90)
    agent = start("agent", "degrading", memory_env("degrading", mock_model, embedder, postgres.url,
                                                   DEBUG_MOCK_RESPONSES=["fine"] * 20))
    try:
        assert chat(agent, "I live in Lisbon.").status_code == 200
        wait_until(lambda: memories(agent)["total"] == 1, 30, what="the fact stored in PostgreSQL")
        assert ready(agent)["status"] == "ok" and ready(agent)["backend"] == "postgresql"

        postgres.stop()
        answered = chat(agent, "Where do I live?")
        assert answered.status_code == 200 and answered.json()["choices"][0]["message"]["content"] == "fine"
        status = ready(agent)
        assert status["status"] == "degraded" and "postgresql store postgresql://kaos:***@127.0.0.1" in status["reason"]
        listed = httpx.get(agent.url + "/memory/long-term")
        assert listed.status_code == 503 and "long-term memory is unavailable" in listed.json()["detail"]

        postgres.start()
        probed = httpx.get(agent.url + "/memory/long-term/status", timeout=30).json()
        assert probed["status"] == "ok", probed
        assert memories(agent)["memories"][0]["text"] == "I live in Lisbon."

        embedder.stop()
        assert chat(agent, "Where do I live?").status_code == 200
        assert "embedder" in ready(agent)["reason"]
    finally:
        embedder.stop()


def test_the_openapi_document_describes_long_term_memory_and_the_answers_match_it(agent):
    document = httpx.get(agent.url + OPENAPI_PATH, timeout=10).json()
    paths = document["paths"]
    listing = paths["/memory/long-term"]["get"]
    assert {p["name"] for p in listing["parameters"]} == {"q", "limit", "offset"}
    assert set(listing["responses"]) == {"200", "400", "401", "503"}
    assert set(paths["/memory/long-term"]["delete"]["responses"]) == {"200", "401", "403", "413", "415", "503"}
    one = paths["/memory/long-term/{memory_id}"]["delete"]
    assert one["parameters"][0]["name"] == "memory_id" and "404" in one["responses"]
    assert "memory.forgotten" in one["summary"] and "/memory/long-term/status" in paths
    chat(agent, "Please note my favourite tree is the oak.", headers=as_(BOB))
    wait_until(lambda: memories(agent, BOB)["memories"], 30, what="bob's fact stored")
    assert_valid(document, "LongTermMemories", memories(agent, BOB))
    assert_valid(document, "LongTermMemories", memories(agent, BOB, q="tree"))
    status = httpx.get(agent.url + "/memory/long-term/status", headers=as_(BOB), timeout=30).json()
    assert_valid(document, "LongTermStatus", status)
    memory_id = memories(agent, BOB)["memories"][0]["id"]
    assert_valid(document, "LongTermForgotten", forget(agent, BOB, memory_id).json())
    assert_valid(document, "LongTermForgotten", forget(agent, BOB).json())
    assert_valid(document, "Error", forget(agent, BOB, memory_id).json())


def test_schemathesis_finds_nothing_on_the_long_term_routes(agent, tmp_path):
    """The document's long-term routes as the agent answers them (test_openapi.py runs the others;
    last here: it forgets bob's memories)."""
    document = httpx.get(agent.url + OPENAPI_PATH, timeout=10).json()
    output = run_schemathesis(agent.url, tmp_path, "-H", f"Authorization: Bearer {BOB}",
                              "--include-path-regex", "^/memory/long-term", config=CONFIG + (
                                  # a memory id exists only once stored: forgetting a made-up one is
                                  # 404, not missing test data
                                  '\n[[operations]]\ninclude-operation-id = "forgetLongTermMemory"\nwarnings = false\n'))
    operations = sum(len(item) for path, item in document["paths"].items() if path.startswith("/memory/long-term"))
    assert operations == 4 and f"Tested: {operations}\n" in output, output

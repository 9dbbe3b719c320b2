"""MemoryStores and long-term memory in the console, in Chromium: the overview lists a Degraded
store, its page shows MemoryDegraded and the agents using it, and the long-term memory page lists,
searches and deletes an agent's memories (one, then all) with the token of the page. The console
is fed by a LocalCatalog; the agent is a stand-in answering /memory/long-term as the runtime does
(docs/memory-store.md), recording each request."""

from __future__ import annotations

import json
from urllib.parse import parse_qs

import pytest

from tests.console.conftest import overview_row, proxied_console
from tests.console.test_server import resource
from tests.support.polling import wait_until

pytestmark = pytest.mark.timeout(120)

TEA, NAME = "mem-" + "b" * 32, "mem-" + "a" * 32
DEGRADED = ("embedder: http://127.0.0.1:4000/v1/embeddings did not answer within 3s; "
            "agents answer without long-term memory until it answers again")


class AgentLongTermMemory:
    """ASGI stand-in of an agent's /memory/long-term, recording (method, path, query, Authorization)."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, dict, str]] = []
        self.memories = [
            {"id": NAME, "text": "The user's name is Ada.", "created_at": 1764331200.0, "session_id": "s1",
             "source": "extraction"},
            {"id": TEA, "text": "Ada prefers tea to coffee.", "created_at": 1764331260.0, "session_id": "s2",
             "source": "tool"},
        ]

    async def __call__(self, scope, receive, send) -> None:
        headers = dict(scope["headers"])
        query = {k: v[0] for k, v in parse_qs(scope["query_string"].decode()).items()}
        path, method = scope["path"], scope["method"]
        self.requests.append((method, path, query, headers.get(b"authorization", b"").decode()))
        status = 200
        if method == "DELETE" and headers.get(b"content-type") != b"application/json":  # the agent's request guard
            body, status = {"detail": "Content-Type must be application/json (got none)"}, 415
        elif method == "DELETE" and path.endswith("/memory/long-term"):
            count, self.memories = len(self.memories), []
            body = {"agent": "assistant", "deleted": count, "total": count}
        elif method == "DELETE":
            memory_id = path.rsplit("/", 1)[-1]
            self.memories = [m for m in self.memories if m["id"] != memory_id]
            body = {"agent": "assistant", "deleted": [memory_id], "total": 1}
        elif "q" in query:
            hits = [{**m, "distance": 0.12} for m in self.memories if "tea" in m["text"]]
            body = {"agent": "assistant", "scope": "user", "query": query["q"], "memories": hits, "total": len(hits)}
        else:
            body = {"agent": "assistant", "scope": "user", "memories": list(reversed(self.memories)),
                    "total": len(self.memories)}
        payload = json.dumps(body).encode()
        await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": payload})


@pytest.fixture(scope="module")
def console():
    agent = resource("Agent", "assistant", "team", phase="Ready", ready=True, endpoint="http://assistant")
    agent["spec"] = {"modelAPI": "llm", "memory": {"store": "facts"}}
    other = resource("Agent", "plain", "team", phase="Ready", ready=True, endpoint="http://plain")
    other["spec"] = {"modelAPI": "llm"}
    store = resource("MemoryStore", "facts", "team", phase="Degraded", ready=False, message=DEGRADED,
                     collection="team-facts", conditions=[
                         {"type": "Ready", "status": "False", "reason": "Degraded", "message": DEGRADED},
                         {"type": "MemoryDegraded", "status": "True", "reason": "Unreachable", "message": DEGRADED}])
    store["spec"] = {"storage": {"type": "local"}, "scope": "user", "retentionDays": 30, "topK": 5,
                     "models": {"embedding": {"modelAPI": "embedder", "model": "minilm"}}}
    with proxied_console([agent, other, store], AgentLongTermMemory()) as served:
        yield served


def test_the_overview_lists_a_degraded_store(page, screenshots):
    state, cells = overview_row(page, "MemoryStore/team/facts")
    assert state == "down"
    assert cells[0] == "MemoryStore" and cells[1] == "facts" and "Degraded" in cells[2]
    assert cells[5] == "local store, scope user; embeddings from embedder/minilm"
    assert cells[6].startswith("embedder: http://127.0.0.1:4000/v1/embeddings did not answer")
    screenshots.save(page, "memorystore-1-overview")


def test_a_stores_page_shows_memory_degraded_and_its_agents(page, screenshots):
    page.goto("/#/memorystore/team/facts")
    page.locator('tr[data-condition="MemoryDegraded"]').wait_for()
    assert page.locator('tr[data-condition="MemoryDegraded"]').get_attribute("data-status") == "True"
    assert "30 days" in page.locator("dl.facts").inner_text()
    links = page.locator('a[href="#/long-term/team/assistant"]')
    assert links.count() == 1 and page.locator('a[href="#/long-term/team/plain"]').count() == 0
    screenshots.save(page, "memorystore-2-store")
    links.click()
    page.wait_for_url("**/#/long-term/team/assistant")
    page.locator('tr[data-memory]').first.wait_for()


def test_memories_are_listed_searched_and_deleted_with_the_token(page, console, screenshots):
    _, memory = console
    page.goto("/")
    page.locator("#token").fill("ada-token")
    page.locator("#token-form button[type=submit]").click()
    page.goto("/#/long-term")
    page.locator("#long-term-agent").select_option("team/assistant")
    page.locator(f'tr[data-memory="{TEA}"]').wait_for()
    assert [r.get_attribute("data-memory") for r in page.locator("tr[data-memory]").all()] == [TEA, NAME]
    assert "2 of 2 memories shown (scope user)" in page.locator("#long-term-count").inner_text()
    assert page.locator('#long-term-agent option[value="team/plain"]').count() == 0, "only agents with a store"
    screenshots.save(page, "memorystore-3-long-term")

    page.locator("#long-term-query").fill("what does Ada drink")
    page.locator("form[role=search] button[type=submit]").click()
    wait_until(lambda: page.locator("tr[data-memory]").count() == 1, what="the search result")
    assert "0.120" in page.locator(f'tr[data-memory="{TEA}"]').inner_text()
    assert memory.requests[-1] == ("GET", "/team/agent/assistant/memory/long-term", {"q": "what does Ada drink"},
                                   "Bearer ada-token")

    page.locator(f'tr[data-memory="{TEA}"] button').click()
    wait_until(lambda: page.locator("tr[data-memory]").count() == 0, what="the deleted memory gone from the search")
    assert ("DELETE", f"/team/agent/assistant/memory/long-term/{TEA}", {}, "Bearer ada-token") in memory.requests

    page.locator("#long-term-query").fill("")
    page.locator("form[role=search] button[type=submit]").click()
    page.locator(f'tr[data-memory="{NAME}"]').wait_for()
    page.once("dialog", lambda dialog: dialog.accept())
    page.locator("#long-term-forget-all").click()
    page.get_by_text("No memories.").wait_for()
    assert ("DELETE", "/team/agent/assistant/memory/long-term", {}, "Bearer ada-token") in memory.requests
    screenshots.save(page, "memorystore-4-forgotten")

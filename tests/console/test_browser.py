"""The console in Chromium against `kaos up` of the (scripted) quickstart: every page, as a user
drives it. The tests share one control plane and run in this order; the last one stops the worker."""

from __future__ import annotations

import json
import os
import re
import signal
import threading
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler
from urllib.parse import quote

import pytest

from tests.console.conftest import (
    COORDINATOR_ANSWER,
    FOLLOW_UP_ANSWER,
    TASK,
    WORKER_ANSWER,
    attribute,
    eventually_true,
)
from tests.support.http_server import LoopbackServer

pytestmark = pytest.mark.timeout(400)

RESOURCES = ["ModelAPI/default/llm", "MCPServer/default/tools", "Agent/default/coordinator", "Agent/default/worker"]
RED = "rgb(207, 34, 46)"  # --bad in console.css


def row(resource: str) -> str:
    return f'tr[data-resource="{resource}"]'


def test_overview_lists_the_four_resources_ready(page, screenshots):
    page.goto("/")
    eventually_true(lambda: all(attribute(page, row(r), "data-state") == "ready" for r in RESOURCES),
                    what="all four resources Ready on the overview")
    for resource in RESOURCES:
        cells = page.locator(row(resource)).locator("td, th").all_inner_texts()
        assert "Ready" in cells[2] and cells[3].startswith("yes"), cells
        assert cells[4].startswith("http://127.0.0.1:"), f"the endpoint is shown: {cells}"
    assert page.locator("h1").inner_text() == "Overview"
    assert page.locator("#source").inner_text() == "Local control plane (kaos up)"
    assert "4 Ready" in page.locator(".summary").inner_text()
    screenshots.save(page, "1-overview")


def test_graph_shows_who_may_delegate_to_whom(page, screenshots):
    page.goto("/#/graph")
    edge = page.locator('[data-edge="default/coordinator->default/worker"]')
    edge.wait_for(state="attached")
    assert edge.get_attribute("data-type") == "delegates"
    assert page.locator('[data-edge="default/worker->default/tools"]').get_attribute("data-type") == "tools"
    assert page.locator('[data-edge="default/coordinator->default/llm"]').get_attribute("data-type") == "model"
    for resource in RESOURCES:
        kind, _, name = resource.split("/")
        node = page.locator(f'[data-node="{kind}/default/{name}"]')
        assert node.get_attribute("data-state") == "ready", resource
    # Nodes are links, reachable from the keyboard.
    page.locator('[data-node="Agent/default/worker"]').focus()
    page.keyboard.press("Enter")
    page.wait_for_url("**/#/agent/default/worker")
    screenshots.save(page, "2b-agent-worker")
    page.go_back()
    page.locator('[data-edge="default/coordinator->default/worker"]').wait_for(state="attached")
    screenshots.save(page, "2-graph")


def test_chat_streams_keeps_the_session_and_shows_the_delegation(page, screenshots):
    page.goto("/#/agent/default/coordinator")
    page.get_by_text("task_delegation", exact=True).wait_for()
    message = page.get_by_label("Message to coordinator")
    message.fill("What is 2 + 3?")
    with page.expect_response(lambda r: r.url.endswith("/default/agent/coordinator/v1/chat/completions")) as answered:
        message.press("Enter")
    response = answered.value
    body = json.loads(response.request.post_data)
    assert body["stream"] is True and body["messages"] == [{"role": "user", "content": "What is 2 + 3?"}]
    assert response.headers["content-type"].startswith("text/event-stream")
    session = response.headers["x-session-id"]

    turn = page.locator('[data-turn][data-done="true"]').first
    turn.wait_for()
    assert turn.locator("[data-answer]").inner_text() == COORDINATOR_ANSWER
    request = turn.locator('[data-step="delegation_request"]')
    request.wait_for()
    assert "worker" in request.inner_text() and TASK in request.inner_text()
    assert WORKER_ANSWER in turn.locator('[data-step="delegation_response"]').inner_text()
    assert page.locator("[data-session]").get_attribute("data-session") == session
    screenshots.save(page, "3-chat")

    # The next turn continues the session the agent returned.
    message.fill("Thanks!")
    with page.expect_response(lambda r: r.url.endswith("/v1/chat/completions")) as answered:
        page.get_by_role("button", name="Send").click()
    second = answered.value
    assert second.request.headers.get("x-session-id") == session
    assert json.loads(second.request.post_data)["session_id"] == session
    assert second.headers["x-session-id"] == session
    page.locator('[data-turn][data-done="true"]').nth(1).wait_for()
    assert page.locator("[data-turn] [data-answer]").nth(1).inner_text() == FOLLOW_UP_ANSWER
    assert "No tool calls or delegations" in page.locator("[data-turn]").nth(1).locator(".steps").inner_text()

    # The delegation that just happened is highlighted on the graph (from the memory events).
    page.goto("/#/graph")
    edge = '[data-edge="default/coordinator->default/worker"]'
    eventually_true(lambda: int(attribute(page, edge, "data-recent") or 0) >= 1, what="a recent delegation edge")
    assert "recent" in page.locator(edge).get_attribute("class")
    assert page.locator(".edge-label").first.text_content() == "1 recent"
    screenshots.save(page, "4-graph-recent-delegation")


class HeldStream:
    """An OpenAI-style SSE answer on 127.0.0.1 that sends its first pieces, then holds the
    stream open until ``release()``: what the page shows meanwhile it rendered as it arrived."""

    def __init__(self, first: list[str], rest: list[str]) -> None:
        self.released = threading.Event()
        stream = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("x-session-id", "streamed-session")
                self.end_headers()
                self.frame({"delta": {"role": "assistant"}})
                for piece in first:
                    self.frame({"delta": {"content": piece}})
                stream.released.wait(60)
                for piece in rest:
                    self.frame({"delta": {"content": piece}})
                self.frame({"delta": {}, "finish_reason": "stop"})
                self.wfile.write(b"data: [DONE]\n\n")

            def frame(self, choice: dict) -> None:
                self.wfile.write(f"data: {json.dumps({'choices': [{'index': 0, **choice}]})}\n\n".encode())
                self.wfile.flush()

            def log_message(self, *_) -> None:
                pass

        self.server = LoopbackServer(Handler)
        self.url = self.server.url + "/v1/chat/completions"

    def close(self) -> None:
        self.released.set()
        self.server.stop()


def test_chat_renders_each_streamed_piece_as_it_arrives(page):
    """The first pieces of an answer are on the page while the rest has not been sent yet."""
    stream = HeldStream(first=["Hel", "lo, "], rest=["wor", "ld!\nSecond line."])
    try:
        page.route("**/default/agent/worker/v1/chat/completions", lambda route: route.continue_(url=stream.url))
        page.goto("/#/agent/default/worker")
        page.get_by_label("Message to worker").fill("Say hello")
        page.get_by_role("button", name="Send").click()
        answer = page.locator("[data-turn] [data-answer]")
        eventually_true(lambda: answer.count() and answer.inner_text() == "Hello, ", what="the first pieces shown")
        assert page.locator('[data-turn][data-done="true"]').count() == 0, "the turn is still streaming"
        stream.released.set()
        page.locator('[data-turn][data-done="true"]').wait_for()
        assert answer.inner_text() == "Hello, world!\nSecond line."
        assert page.locator("[data-session]").get_attribute("data-session") == "streamed-session"
    finally:
        stream.close()


def test_memory_timeline_filters_by_type_and_session(page, screenshots):
    page.goto("/#/memory/default/coordinator")
    timeline = page.locator(".timeline > li[data-event-type]")
    eventually_true(lambda: timeline.count() >= 6, what="the coordinator's events")
    types = set(timeline.evaluate_all("items => items.map(i => i.dataset.eventType)"))
    assert {"user_message", "delegation_request", "delegation_response", "agent_response"} <= types
    session = timeline.first.get_attribute("data-session")

    page.get_by_label("Event type").select_option("delegation_request")
    eventually_true(lambda: set(timeline.evaluate_all("i => i.map(x => x.dataset.eventType)")) == {"delegation_request"},
                    what="only delegation_request events")
    assert TASK in timeline.first.inner_text()
    assert "1 of 1 matching event" in page.locator("#memory-count").inner_text()
    screenshots.save(page, "5-memory-filtered")

    page.get_by_label("Event type").select_option("")
    page.get_by_label("Session", exact=True).select_option(session)
    eventually_true(lambda: timeline.count() >= 6 and set(timeline.evaluate_all("i => i.map(x => x.dataset.session)")) == {session},
                    what="only the chat's session")

    page.get_by_label("Agent").select_option("default/worker")
    page.wait_for_url("**/#/memory/default/worker")
    page.get_by_label("Event type").select_option("tool_call")
    eventually_true(lambda: timeline.count() == 1 and "add" in timeline.first.inner_text(), what="the worker's tool call")
    screenshots.save(page, "5b-memory-worker")


def test_mcp_tool_call_from_the_tool_page(page, screenshots):
    page.goto("/#/mcp/default/tools")
    page.locator('tr[data-tool="add"]').wait_for()
    assert page.locator('tr[data-tool="echo"]').count() == 1
    page.get_by_label("Tool", exact=True).select_option("add")
    assert json.loads(page.get_by_label("Arguments (JSON object)").input_value()) == {"a": 0, "b": 0}
    page.get_by_label("Arguments (JSON object)").fill('{"a": 2, "b": 40}')
    page.get_by_role("button", name="Call tool").click()
    result = page.locator('#tool-result [data-result="ok"]')
    result.wait_for()
    assert result.inner_text().strip() == "42"
    screenshots.save(page, "6-mcp-tool-call")

    page.get_by_label("Arguments (JSON object)").fill("{not json")
    page.get_by_role("button", name="Call tool").click()
    assert "The arguments are not valid" in page.locator("#tool-result .error").inner_text()


def test_modelapi_page_lists_models_and_answers_a_test_prompt(page, screenshots):
    page.goto("/#/modelapi/default/llm")
    page.get_by_text("Served now (/v1/models)").wait_for()
    page.get_by_label("Model", exact=True).select_option("quickstart-offline")
    page.get_by_label("Prompt", exact=True).fill("Hello?")
    page.get_by_role("button", name="Send prompt").click()
    answer = page.locator("#prompt-result [data-answer]")
    answer.wait_for(timeout=60_000)
    assert "offline demo model" in answer.inner_text()
    screenshots.save(page, "7-modelapi")


def test_errors_are_told_in_words(page, screenshots):
    page.goto("/#/agent/default/nobody")
    error = page.locator(".error").filter(has_text="agent card")
    error.wait_for()
    assert "The agent card of nobody was not found: no Agent 'nobody' in namespace 'default'" in error.inner_text()
    assert page.get_by_text("This agent is not in the resource list").is_visible()
    page.goto("/#/no/such/page")
    assert page.locator("h1").inner_text() == "Page not found"
    screenshots.save(page, "8-error")


ELSEWHERE = "http://127.0.0.1:9/a2a-elsewhere"  # an A2A agent outside KAOS, named by URL (nothing listens)
TRAVEL, BOOKS = "https://travel.example.com/a2a", "https://books.example.com"


def with_agents(extra: list[dict]):
    """A route handler for the console's resource list that appends Agents to the real one."""
    def handle(route) -> None:
        response = route.fetch()
        payload = response.json()
        payload["items"] = payload.get("items", []) + extra
        route.fulfill(response=response, json=payload)
    return handle


def delegations(*peers: str):
    """A route handler for an agent's memory events: one delegation_request per peer, just now."""
    now = datetime.now(timezone.utc).isoformat()
    events = [{"event_type": "delegation_request", "timestamp": now, "session_id": "s",
               "content": {"agent": peer, "task": "a task"}} for peer in peers]
    return lambda route: route.fulfill(json={"events": events})


def test_an_access_url_is_an_external_a2a_agent(page, screenshots):
    """agentNetwork.access entries that are URLs (fed to the page beside the quickstart): an
    external A2A agent node and a link to its card, not an Agent that is "Not found"; delegations
    the memory names by card name (or by the name derived from the URL) highlight its edge."""
    page.goto("/")
    eventually_true(lambda: attribute(page, row("Agent/default/coordinator"), "data-state") == "ready", what="coordinator Ready")
    coordinator = page.evaluate("() => fetch('_console/api/resources').then(r => r.json())")["items"]
    coordinator = next(item for item in coordinator if item["kind"] == "Agent" and item["metadata"]["name"] == "coordinator")

    def agent(name: str, access: list[str]) -> dict:
        return {**coordinator, "metadata": {**coordinator["metadata"], "name": name},
                "spec": {**coordinator["spec"], "agentNetwork": {"access": access}}}

    page.route("**/_console/api/resources", with_agents([agent("router", ["worker", ELSEWHERE]),
                                                         agent("fanout", [TRAVEL, BOOKS])]))
    # router's A2A peer by its card's name (its only URL); fanout's by the derived name of one
    # URL, and by a card name that could be either URL (not highlighted).
    page.route(re.compile(r"/default/agent/router/memory/events\?"), delegations("Elsewhere Agent", "Elsewhere Agent", "worker"))
    page.route(re.compile(r"/default/agent/fanout/memory/events\?"), delegations("books-example-com", "Some Card"))

    page.goto("/#/graph")
    node = page.locator(f'[data-node="A2A/default/{ELSEWHERE}"]')
    node.wait_for(state="attached")
    assert node.get_attribute("data-state") == "external"
    assert node.evaluate("el => el.tagName") == "a"
    assert node.get_attribute("href") == f"{ELSEWHERE}/.well-known/agent-card.json"
    assert node.get_attribute("target") == "_blank"
    assert "127.0.0.1:9/a2a-elsewhere" in node.text_content() and "A2A agent · External" in node.text_content()
    link = page.get_by_role("link", name=f"A2A agent at {ELSEWHERE}")
    assert link.count() == 1 and ELSEWHERE in node.locator("title").text_content()
    stroke = node.locator("rect").evaluate("el => getComputedStyle(el).stroke")
    assert stroke == "rgb(89, 99, 110)", f"a neutral grey, not a status colour: {stroke}"
    assert page.locator(f'[data-node="Agent/default/{ELSEWHERE}"]').count() == 0
    assert page.locator('[data-namespace="default"] [data-state="missing"]').count() == 0, "no URL is a Not found agent"
    # fanout's two URLs are two nodes; router's KAOS peer is the worker as before.
    assert page.locator(f'[data-node="A2A/default/{TRAVEL}"]').count() == 1
    assert page.locator(f'[data-node="A2A/default/{BOOKS}"]').count() == 1

    edge = f'[data-edge="default/router->{ELSEWHERE}"]'
    assert page.locator(edge).get_attribute("data-type") == "delegates"
    eventually_true(lambda: attribute(page, edge, "data-recent") == "2", what="the delegations to the A2A agent highlighted")
    assert attribute(page, '[data-edge="default/router->default/worker"]', "data-recent") == "1"
    assert attribute(page, f'[data-edge="default/fanout->{BOOKS}"]', "data-recent") == "1"
    assert attribute(page, f'[data-edge="default/fanout->{TRAVEL}"]', "data-recent") == "0"
    connection = page.locator(f'[data-connection="default/router->{ELSEWHERE}"]')
    assert connection.text_content().startswith(f"router may delegate to the A2A agent outside KAOS at {ELSEWHERE}")
    assert connection.locator("a").get_attribute("href") == f"{ELSEWHERE}/.well-known/agent-card.json"
    screenshots.save(page, "8b-graph-a2a-peer")

    page.goto("/#/agent/default/router")
    peer = page.locator(f'[data-peer-url="{ELSEWHERE}"]')
    peer.wait_for()
    assert peer.get_attribute("href") == f"{ELSEWHERE}/.well-known/agent-card.json"
    assert peer.get_attribute("target") == "_blank" and "noopener" in peer.get_attribute("rel")
    assert peer.inner_text() == ELSEWHERE
    assert page.locator('[data-peer="worker"]').get_attribute("href") == "#/agent/default/worker"
    assert page.locator(f'a[href="#/agent/default/{quote(ELSEWHERE, safe="")}"]').count() == 0
    screenshots.save(page, "8c-agent-a2a-peer")


def test_stopping_the_worker_turns_it_red_within_seconds(browser, kaos_up, page, screenshots):
    overview = page
    overview.goto("/")
    eventually_true(lambda: attribute(overview, row("Agent/default/worker"), "data-state") == "ready", what="worker Ready")
    graph = overview.context.new_page()
    graph.goto("/#/graph")
    node = '[data-node="Agent/default/worker"]'
    eventually_true(lambda: attribute(graph, node, "data-state") == "ready", what="worker node Ready")

    os.kill(kaos_up.deployment("agent-worker")["pid"], signal.SIGKILL)  # as if its pod crashed

    down = {"down", "failed"}
    eventually_true(lambda: attribute(overview, row("Agent/default/worker"), "data-state") in down
                    and attribute(graph, node, "data-state") in down, timeout=8, what="the worker red on both pages")
    badge = overview.locator(row("Agent/default/worker")).locator(".badge")
    assert badge.evaluate("el => getComputedStyle(el).color") == RED
    assert graph.locator(f"{node} rect").evaluate("el => getComputedStyle(el).stroke") == RED
    assert "stopped answering" in overview.locator(row("Agent/default/worker")).inner_text()
    screenshots.save(overview, "9-overview-worker-down")
    screenshots.save(graph, "9b-graph-worker-down")

    # It is restarted (as a Deployment would) and turns green again.
    eventually_true(lambda: attribute(overview, row("Agent/default/worker"), "data-state") == "ready"
                    and attribute(graph, node, "data-state") == "ready", timeout=60, what="the worker Ready again")

"""Triggers in the console, in Chromium: the overview lists them with their next run and last
outcome, a Trigger's page shows its runs newest first, and a run links to its session's timeline
in the agent's memory. The console is fed by a LocalCatalog; the agent's memory is a stand-in
that records the queries it gets."""

from __future__ import annotations

import json
from urllib.parse import parse_qs

import pytest

from tests.console.conftest import overview_row, proxied_console
from tests.console.test_server import resource

pytestmark = pytest.mark.timeout(120)

HISTORY = [
    {"runId": "r1", "source": "schedule", "outcome": "Succeeded", "sessionId": "trigger-nightly-r1",
     "startTime": "2026-03-01T01:00:00Z", "endTime": "2026-03-01T01:00:04Z", "tokens": 812,
     "summary": "Report: 3 builds, 1 failure."},
    {"runId": "r2", "source": "schedule", "outcome": "TimedOut", "sessionId": "trigger-nightly-r2",
     "startTime": "2026-03-02T01:00:00Z", "endTime": "2026-03-02T01:05:00Z", "tokens": 40,
     "summary": "timed out: the run took longer than limits.timeout (300 s)"},
]


class AgentMemory:
    """ASGI stand-in of an agent's /memory endpoints, recording each events query."""

    def __init__(self) -> None:
        self.queries: list[dict] = []

    async def __call__(self, scope, receive, send) -> None:
        path = scope["path"]
        if path.endswith("/memory/sessions"):
            body = {"agent": "reporter", "sessions": ["trigger-nightly-r1", "trigger-nightly-r2"], "total": 2}
        else:
            query = parse_qs(scope["query_string"].decode())
            self.queries.append(query)
            session = query.get("session_id", [""])[0]
            events = [{"event_id": f"e-{session}", "timestamp": "2026-03-02T01:00:00Z", "event_type": "user_message",
                       "content": f"message of {session}", "metadata": {"session_id": session}}] if session else []
            body = {"agent": "reporter", "events": events, "total": len(events)}
        payload = json.dumps(body).encode()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": payload})


@pytest.fixture(scope="module")
def console():
    agent = resource("Agent", "reporter", "team", phase="Ready", ready=True, endpoint="http://reporter")
    agent["spec"] = {"modelAPI": "llm"}
    trigger = resource("Trigger", "nightly", "team", phase="Ready", ready=True, message="next run at 2026-03-03T01:00:00Z",
                       lastRun="2026-03-02T01:00:00Z", nextRun="2026-03-03T01:00:00Z", active=[], history=HISTORY)
    trigger["spec"] = {"agent": "reporter", "schedule": "0 2 * * *", "timeZone": "Europe/Paris",
                       "message": "Write the nightly report.", "session": "new", "concurrencyPolicy": "Forbid",
                       "limits": {"timeout": "5m"}}
    with proxied_console([agent, trigger], AgentMemory()) as served:
        yield served


def test_the_overview_lists_a_trigger_with_its_schedule_and_last_outcome(page, screenshots):
    state, cells = overview_row(page, "Trigger/team/nightly")
    assert state == "ready"
    assert cells[0] == "Trigger" and cells[1] == "nightly" and "Ready" in cells[2]
    assert "schedule 0 2 * * * (Europe/Paris) → agent reporter" in cells[5] and "last run TimedOut" in cells[5]
    assert "next run" in cells[5]
    screenshots.save(page, "triggers-1-overview")


def test_a_triggers_page_shows_its_runs_and_links_each_to_its_session(page, console, screenshots):
    _, memory = console
    page.goto("/#/trigger/team/nightly")
    page.locator("tr[data-run]").first.wait_for()
    assert [r.get_attribute("data-run") for r in page.locator("tr[data-run]").all()] == ["r2", "r1"]  # newest first
    assert page.locator('tr[data-run="r2"]').get_attribute("data-outcome") == "TimedOut"
    assert "timed out" in page.locator('tr[data-run="r2"]').inner_text()
    assert page.locator("[data-next-run]").get_attribute("data-next-run") == "2026-03-03T01:00:00Z"
    screenshots.save(page, "triggers-2-trigger")
    page.locator('[data-session-link="trigger-nightly-r1"]').click()
    page.wait_for_url("**/#/memory/team/reporter/session/trigger-nightly-r1")
    page.get_by_text("message of trigger-nightly-r1").wait_for()
    assert page.locator("#memory-session").input_value() == "trigger-nightly-r1"
    assert {"session_id": ["trigger-nightly-r1"]}.items() <= {k: v for k, v in memory.queries[-1].items()}.items()
    screenshots.save(page, "triggers-3-run-session")

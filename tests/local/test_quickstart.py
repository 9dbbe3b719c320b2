"""examples/quickstart/ as a newcomer runs it, offline and unchanged (issue 22 part 4): the first
chat with `coordinator` shows the network working (a delegation to `worker` and a tool call),
in the answer, in the agents' memory and in `kaos logs`, and says that no LLM answered."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.support.kaos_cli import Kaos, kaos_running

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart"


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory):
    with kaos_running(tmp_path_factory.mktemp("quickstart") / "home", QUICKSTART) as kaos:
        yield kaos


def event_types(kaos: Kaos, agent: str) -> list[str]:
    events = httpx.get(f"{kaos.url}/default/agent/{agent}/memory/events", timeout=10).json()["events"]
    return [event["event_type"] for event in events]


def test_the_first_chat_shows_a_delegation_and_a_tool_call(quickstart):
    chat = quickstart.kaos("chat", "coordinator", "What is 2 + 3?")
    assert chat.returncode == 0, chat.stderr
    assert "I asked worker. It answered: I called add(a=2, b=3). It returned: 5" in chat.stdout
    assert "offline demo model: rules, not an LLM" in chat.stdout and "OPENAI_API_KEY" in chat.stdout
    assert {"delegation_request", "delegation_response"} <= set(event_types(quickstart, "coordinator"))
    assert {"tool_call", "tool_result"} <= set(event_types(quickstart, "worker"))
    assert "delegated to worker" in quickstart.kaos("logs", "coordinator").stdout
    assert "tool add called" in quickstart.kaos("logs", "worker").stdout


def test_a_streamed_chat_without_numbers_echoes_through_the_worker(quickstart):
    chat = quickstart.kaos("chat", "coordinator", "--stream", "Hello there")
    assert chat.returncode == 0, chat.stderr
    assert 'I asked worker. It answered: I called echo(message="Hello there"). It returned: Hello there' in chat.stdout

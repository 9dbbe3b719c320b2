"""The agent as an A2A server (issue 12), driven by the official a2a-sdk client against a
real runtime process: the card (its skills from a real MCP server's tools, its URLs behind a
proxy), message/send and SendMessage, a streamed answer as task status and artifact updates (the
first piece before the model has finished), tasks/get, tasks/cancel (the loop cancelled too), and
an A2A context id as a KAOS session."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.helpers.proto_helpers import get_artifact_text, new_text_message
from a2a.types import CancelTaskRequest, GetTaskRequest, Role, SendMessageRequest, TaskState

from kaos_runtime.protocols.a2a_server import agent_card
from tests.support.polling import wait_until

from .conftest import agent_env, events
from .test_upstream_compat import SilentModel

TOOLS = '''
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b

def shout(message: str) -> str:
    """Upper-case a message."""
    return message.upper()
'''


@pytest.fixture(scope="module")
def tools_server(start):
    return start("mcp", "a2a-tools", {"MCP_TOOLS_STRING": TOOLS})


@pytest.fixture(scope="module")
def agent(start, mock_model, tools_server):
    return start("agent", "a2a-agent", agent_env("a2a-agent", mock_model, AGENT_DESCRIPTION="Answers over A2A",
                                                 MCP_SERVERS="tools", MCP_SERVER_TOOLS_URL=tools_server.url + "/mcp"))


pytestmark = pytest.mark.usefixtures("clean_model")


def test_card_has_the_a2a_fields(agent):
    card = httpx.get(agent.url + "/.well-known/agent-card.json", timeout=10).json()
    assert card["name"] == "a2a-agent" and card["description"] == "Answers over A2A"
    assert card["capabilities"]["streaming"] is True
    assert card["url"] == agent.url + "/a2a" and card["protocolVersion"].startswith("0.3")
    assert {(i["url"], i["protocolVersion"]) for i in card["supportedInterfaces"]} == {
        (agent.url + "/a2a", "1.0"), (agent.url + "/a2a", "0.3")}
    assert httpx.get(agent.url + "/.well-known/agent.json", timeout=10).json()["name"] == "a2a-agent"  # kept


def test_card_skills_are_the_mcp_servers_tools(agent):
    skills = {skill["id"]: skill for skill in httpx.get(agent.url + "/.well-known/agent-card.json", timeout=10).json()["skills"]}
    assert set(skills) == {"add", "shout"}
    assert skills["add"]["name"] == "add" and skills["add"]["description"] == "Add two numbers."
    assert skills["shout"]["description"] == "Upper-case a message." and skills["shout"]["tags"] == ["mcp-tool"]


def test_without_tools_the_one_skill_is_chat():
    runtime = SimpleNamespace(config=SimpleNamespace(name="plain", description=""),
                              tools=SimpleNamespace(skills=lambda: []))
    assert [skill.id for skill in agent_card(runtime, "http://plain").skills] == ["chat"]


def test_card_urls_behind_a_proxy_follow_the_forwarded_headers(agent):
    """A gateway that strips /team/agent/a2a-agent and connects from elsewhere says what the client used."""
    public = "https://kaos.example.com/team/agent/a2a-agent"
    headers = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "kaos.example.com",
               "X-Forwarded-Prefix": "/team/agent/a2a-agent"}
    card = httpx.get(agent.url + "/.well-known/agent-card.json", headers=headers, timeout=10).json()
    assert card["url"] == public + "/a2a"
    assert {i["url"] for i in card["supportedInterfaces"]} == {public + "/a2a"}
    kaos_card = httpx.get(agent.url + "/.well-known/agent", headers=headers, timeout=10).json()
    assert kaos_card["url"] == public
    # a malformed value changes nothing
    odd = httpx.get(agent.url + "/.well-known/agent-card.json", timeout=10,
                    headers={"X-Forwarded-Host": "evil.example/x", "X-Forwarded-Proto": "ftp"}).json()
    assert odd["url"] == agent.url + "/a2a"


def user_message(text: str, context_id: str | None = None):
    return new_text_message(text, context_id=context_id, role=Role.ROLE_USER)


async def test_send_message_with_the_sdk_client_and_the_context_as_session(agent, mock_model):
    async with httpx.AsyncClient(timeout=60) as http:
        client = await create_client(agent.url, ClientConfig(streaming=False, httpx_client=http))
        results = [item async for item in client.send_message(SendMessageRequest(message=user_message("hello a2a")))]
        task = results[-1].task
        assert task.status.state == TaskState.TASK_STATE_COMPLETED
        assert get_artifact_text(task.artifacts[0]) == "echo: hello a2a"
        again = [item async for item in client.send_message(SendMessageRequest(
            message=user_message("second turn", context_id=task.context_id)))]
        assert again[-1].task.context_id == task.context_id
        fetched = await client.get_task(GetTaskRequest(id=task.id))
        assert fetched.status.state == TaskState.TASK_STATE_COMPLETED
    # one KAOS session holds both turns, and the second model call saw the first
    session = events(agent, session_id=task.context_id)
    assert [e["content"] for e in session["events"] if e["event_type"] == "user_message"] == ["hello a2a", "second turn"]
    assert "hello a2a" in str(mock_model.requests()[-1]["messages"])


def folded(updates) -> str:
    """The answer as a client that follows the spec sees it: append adds, no append replaces."""
    text = ""
    for item in updates:
        if item.WhichOneof("payload") == "artifact_update":
            piece = get_artifact_text(item.artifact_update.artifact, "")
            text = text + piece if item.artifact_update.append else piece
    return text


async def test_streamed_answer_as_status_and_artifact_updates(agent):
    async with httpx.AsyncClient(timeout=60) as http:
        client = await create_client(agent.url, ClientConfig(streaming=True, httpx_client=http))
        updates = [item async for item in client.send_message(SendMessageRequest(message=user_message("stream me")))]
    kinds = [item.WhichOneof("payload") for item in updates]
    assert "status_update" in kinds and "artifact_update" in kinds
    states = [item.status_update.status.state for item in updates if item.WhichOneof("payload") == "status_update"]
    assert states[0] == TaskState.TASK_STATE_WORKING and states[-1] == TaskState.TASK_STATE_COMPLETED
    assert folded(updates) == "echo: stream me"


async def test_the_first_piece_arrives_before_the_model_has_finished(agent, mock_model):
    # The model sends "Hello", then waits for the test to release it: the client must have "Hello"
    # as an artifact update while the model is still generating (no timing involved).
    mock_model.script({"parts": ["Hello", " from", " A2A"], "gate": "a2a"})
    async with httpx.AsyncClient(timeout=60) as http:
        client = await create_client(agent.url, ClientConfig(streaming=True, httpx_client=http))
        stream = client.send_message(SendMessageRequest(message=user_message("stream slowly")))
        updates = []

        async def until_an_artifact_update():
            async for item in stream:
                updates.append(item)
                if item.WhichOneof("payload") == "artifact_update":
                    return

        await asyncio.wait_for(until_an_artifact_update(), 20)  # held back, it would come only after the release
        first = updates[-1].artifact_update
        assert get_artifact_text(first.artifact) == "Hello" and not first.append and not first.last_chunk
        assert mock_model.streams()[0]["completed"] is False  # the model is still at it
        mock_model.release("a2a")
        updates += [item async for item in stream]
    pieces = [item.artifact_update for item in updates if item.WhichOneof("payload") == "artifact_update"]
    # each piece as it came, then the whole answer as the last chunk, replacing the pieces
    assert [(get_artifact_text(p.artifact), p.append, p.last_chunk) for p in pieces] == [
        ("Hello", False, False), (" from", True, False), (" A2A", True, False), ("Hello from A2A", False, True)]
    assert folded(updates) == "Hello from A2A"
    assert updates[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
    async with httpx.AsyncClient(timeout=60) as http:  # the task holds the answer as one part
        client = await create_client(agent.url, ClientConfig(streaming=False, httpx_client=http))
        task = await client.get_task(GetTaskRequest(id=pieces[0].task_id))
    assert [part.text for part in task.artifacts[0].parts] == ["Hello from A2A"]


def rpc(agent, method: str, params: dict, **kwargs) -> dict:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    return httpx.post(agent.url + "/a2a", json=body, timeout=60, **kwargs).json()


def test_v0_3_method_names(agent):
    message = {"kind": "message", "role": "user", "messageId": "m-1", "parts": [{"kind": "text", "text": "old names"}]}
    sent = rpc(agent, "message/send", {"message": message})["result"]
    assert sent["status"]["state"] == "completed", sent
    assert sent["artifacts"][0]["parts"][0]["text"] == "echo: old names"
    got = rpc(agent, "tasks/get", {"id": sent["id"]})["result"]
    assert got["id"] == sent["id"] and got["status"]["state"] == "completed"
    with httpx.stream("POST", agent.url + "/a2a", timeout=60, json={
            "jsonrpc": "2.0", "id": 2, "method": "message/stream",
            "params": {"message": {**message, "messageId": "m-2"}}}) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        body = response.read().decode()
    assert '"status-update"' in body and '"artifact-update"' in body and '"completed"' in body
    missing = rpc(agent, "tasks/cancel", {"id": "no-such-task"})
    assert "error" in missing


async def test_cancel_a_running_task(start):
    model = SilentModel()  # the model call never answers: the task stays working until canceled
    agent = start("agent", "a2a-cancel", {**agent_env("a2a-cancel"), "MODEL_API_URL": model.url,
                                          "MODEL_PRELOAD": "false", "MODEL_TIMEOUT_SECONDS": "0"})
    try:
        async with httpx.AsyncClient(timeout=60) as http:
            client = await create_client(agent.url, ClientConfig(streaming=True, httpx_client=http))
            stream = client.send_message(SendMessageRequest(message=user_message("cancel me")))
            task = (await stream.__anext__()).task
            task_id = task.id
            working = await stream.__anext__()
            assert working.status_update.status.state == TaskState.TASK_STATE_WORKING
            canceled = await client.cancel_task(CancelTaskRequest(id=task_id))
            assert canceled.status.state == TaskState.TASK_STATE_CANCELED
            assert (await client.get_task(GetTaskRequest(id=task_id))).status.state == TaskState.TASK_STATE_CANCELED
            await stream.aclose()
        # the loop itself was cancelled, and said so in the session's memory
        cancelled = wait_until(lambda: events(agent, session_id=task.context_id, event_type="error")["events"],
                               what="the loop's cancelled event")
        assert cancelled[0]["metadata"]["cancelled"] is True
        assert [e["event_type"] for e in events(agent, session_id=task.context_id)["events"]] == ["user_message", "error"]
    finally:
        model.close()

"""The agent as an A2A server (issue 12), driven by the official a2a-sdk client against a
real runtime process: the card, message/send and SendMessage, a streamed answer as task status
and artifact updates, tasks/get, tasks/cancel, and an A2A context id as a KAOS session."""

from __future__ import annotations

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.helpers.proto_helpers import get_artifact_text, new_text_message
from a2a.types import CancelTaskRequest, GetTaskRequest, Role, SendMessageRequest, TaskState

from .conftest import agent_env, events
from .test_upstream_compat import SilentModel


@pytest.fixture(scope="module")
def agent(start, mock_model):
    return start("agent", "a2a-agent", agent_env("a2a-agent", mock_model, AGENT_DESCRIPTION="Answers over A2A"))


@pytest.fixture(autouse=True)
def clean_model(mock_model):
    mock_model.reset()


def test_card_has_the_a2a_fields(agent):
    card = httpx.get(agent.url + "/.well-known/agent-card.json", timeout=10).json()
    assert card["name"] == "a2a-agent" and card["description"] == "Answers over A2A"
    assert card["capabilities"]["streaming"] is True
    assert card["url"] == agent.url + "/a2a" and card["protocolVersion"].startswith("0.3")
    assert {(i["url"], i["protocolVersion"]) for i in card["supportedInterfaces"]} == {
        (agent.url + "/a2a", "1.0"), (agent.url + "/a2a", "0.3")}
    assert card["skills"] and card["skills"][0]["id"]
    assert httpx.get(agent.url + "/.well-known/agent.json", timeout=10).json()["name"] == "a2a-agent"  # kept


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


async def test_streamed_answer_as_status_and_artifact_updates(agent):
    async with httpx.AsyncClient(timeout=60) as http:
        client = await create_client(agent.url, ClientConfig(streaming=True, httpx_client=http))
        updates = [item async for item in client.send_message(SendMessageRequest(message=user_message("stream me")))]
    kinds = [item.WhichOneof("payload") for item in updates]
    assert "status_update" in kinds and "artifact_update" in kinds
    states = [item.status_update.status.state for item in updates if item.WhichOneof("payload") == "status_update"]
    assert states[0] == TaskState.TASK_STATE_WORKING and states[-1] == TaskState.TASK_STATE_COMPLETED
    text = "".join(get_artifact_text(item.artifact_update.artifact) for item in updates
                   if item.WhichOneof("payload") == "artifact_update")
    assert text == "echo: stream me"


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
            task_id = (await stream.__anext__()).task.id
            working = await stream.__anext__()
            assert working.status_update.status.state == TaskState.TASK_STATE_WORKING
            canceled = await client.cancel_task(CancelTaskRequest(id=task_id))
            assert canceled.status.state == TaskState.TASK_STATE_CANCELED
            assert (await client.get_task(GetTaskRequest(id=task_id))).status.state == TaskState.TASK_STATE_CANCELED
            await stream.aclose()
    finally:
        model.close()

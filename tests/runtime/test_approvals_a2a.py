"""Approvals over A2A with the official a2a-sdk client against a real agent: the task goes
``input-required`` with the pending call in its status message; the client decides by a message
to the same task (the task then completes) or through ``POST /approvals/{id}`` (the task
completes all the same, seen with GetTask)."""

from __future__ import annotations

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.helpers.proto_helpers import get_artifact_text, get_data_parts, get_message_text, new_text_message
from a2a.types import GetTaskRequest, Role, SendMessageRequest, TaskState

from kaos_runtime.protocols.waiting_run import TaskDecision, decision_of
from tests.support.polling import eventually

from .approval_support import call, decide, gated_env, native, pending, tool_messages
from .conftest import events


@pytest.fixture(scope="module")
def agent(start, mock_model, approval_tools):
    return start("agent", "a2a-gated", gated_env("a2a-gated", mock_model, approval_tools))


pytestmark = pytest.mark.usefixtures("clean_model")


def message(text: str, task=None):
    sent = new_text_message(text, role=Role.ROLE_USER, context_id=task.context_id if task else None,
                            task_id=task.id if task else None)
    return SendMessageRequest(message=sent)


async def send(client, request):
    return [item async for item in client.send_message(request)][-1].task


def test_decisions_in_a_message():
    assert decision_of("approve", []) == TaskDecision("approve")
    assert decision_of("Reject: not today", []) == TaskDecision("reject", "not today")
    assert decision_of('{"decision": "reject", "reason": "no", "approval_id": "apr-1"}', []) == \
        TaskDecision("reject", "no", "apr-1")
    assert decision_of("", [{"decision": "approve", "reason": "fine"}]) == TaskDecision("approve", "fine")
    assert decision_of("what is this?", [{"other": 1}]) is None


async def test_input_required_then_a_decision_in_the_same_task(agent, mock_model):
    mock_model.script(native(call("delete_file", path="/a2a/one")), "Deleted over A2A.")
    async with httpx.AsyncClient(timeout=60) as http:
        client = await create_client(agent.url, ClientConfig(streaming=False, httpx_client=http))
        task = await send(client, message("delete /a2a/one"))
        assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        status = task.status.message
        assert "delete_file" in get_message_text(status) and "/a2a/one" in get_message_text(status)
        [waiting] = get_data_parts(status.parts)[0]["approvals"]
        assert waiting["tool"] == "delete_file" and waiting["arguments"] == {"path": "/a2a/one"}
        assert [a["id"] for a in pending(agent, session_id=task.context_id)] == [waiting["id"]]

        done = await send(client, message("approve: go ahead", task))
        assert done.id == task.id and done.status.state == TaskState.TASK_STATE_COMPLETED
        assert get_artifact_text(done.artifacts[-1]) == "Deleted over A2A."
    assert tool_messages(mock_model.requests()[-1]) == ["deleted /a2a/one"]
    granted = [e["content"] for e in events(agent, session_id=task.context_id)["events"]
               if e["event_type"] == "approval_granted"]
    assert granted[0]["approval_id"] == waiting["id"] and granted[0]["reason"] == "go ahead"


async def test_input_required_then_rejected_through_post_approvals(agent, mock_model):
    mock_model.script(native(call("delete_file", path="/a2a/two")), "Not deleted.")
    async with httpx.AsyncClient(timeout=60) as http:
        client = await create_client(agent.url, ClientConfig(streaming=True, httpx_client=http))
        updates = [item async for item in client.send_message(message("delete /a2a/two"))]  # ends at input-required
        statuses = [item.status_update for item in updates if item.WhichOneof("payload") == "status_update"]
        assert statuses[-1].status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        task = await client.get_task(GetTaskRequest(id=statuses[-1].task_id))
        assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        [approval] = pending(agent, session_id=task.context_id)
        assert decide(agent, approval["id"], "reject", "keep it").status_code == 200

        async def completed():
            fetched = await client.get_task(GetTaskRequest(id=task.id))
            return fetched if fetched.status.state == TaskState.TASK_STATE_COMPLETED else None

        done = await eventually(completed, 30, what="the task completed after the decision")
        assert get_artifact_text(done.artifacts[-1]) == "Not deleted."
    [result] = tool_messages(mock_model.requests()[-1])
    assert "not run" in result and "keep it" in result

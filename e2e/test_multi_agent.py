"""A coordinator and two workers: discovery, delegation with memory, separate worker memories."""

import time

import pytest

from e2e.conftest import chat, create_agent_resource, deploy_and_wait, fenced, memory_events
from tests.support.polling import eventually

pytestmark = [pytest.mark.e2e, pytest.mark.dataplane]


@pytest.fixture(scope="module")
def team(test_namespace, shared_modelapi):
    stamp = int(time.time())
    tasks = {"team-a": f"Summarise report A-{stamp}", "team-b": f"Translate note B-{stamp}"}
    urls = {}
    for worker, task in tasks.items():
        urls[worker] = deploy_and_wait(create_agent_resource(
            test_namespace, worker, shared_modelapi, description=f"Worker {worker} of the e2e team",
            mock_responses=[f"{worker} finished: {task}"]), test_namespace)
    urls["team-lead"] = deploy_and_wait(create_agent_resource(
        test_namespace, "team-lead", shared_modelapi, access=list(tasks),
        description="Coordinator of the e2e team"), test_namespace)
    return urls, tasks


def system_prompt(request: dict) -> str:
    return " ".join(str(m.get("content")) for m in request["messages"] if m.get("role") == "system")


async def test_coordinator_discovers_and_delegates(team, mock_model_server):
    urls, tasks = team

    # discovery: the coordinator's prompt names both peers with the descriptions from their cards.
    # A request waits at most 2 s for the cards (REQUEST_WAIT_SECONDS), so in a cluster the first
    # may go out with the names alone while a new pod's first connections are let through.
    async def described() -> str | None:
        mock_model_server.reset()
        assert (await chat(urls["team-lead"], "Who can help?")).status_code == 200
        prompt = system_prompt(mock_model_server.requests()[0])
        return prompt if all(f"Worker {w} of the e2e team" in prompt for w in tasks) else None

    await eventually(described, timeout=60, interval=1, what="the peers' descriptions in the coordinator's prompt")

    mock_model_server.reset()
    mock_model_server.script([
        fenced("delegate", {"agent": "team-a", "task": tasks["team-a"]}),
        fenced("delegate", {"agent": "team-b", "task": tasks["team-b"]}),
        "Both workers are done.",
    ])
    response = await chat(urls["team-lead"], "Get the report summarised and the note translated.")
    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["message"]["content"] == "Both workers are done."

    prompt = system_prompt(mock_model_server.requests()[0])
    for worker in ("team-a", "team-b"):
        assert worker in prompt
        assert f"Worker {worker} of the e2e team" in prompt

    events = (await memory_events(urls["team-lead"]))["events"]
    requests = [e for e in events if e["event_type"] == "delegation_request"]
    responses = [e for e in events if e["event_type"] == "delegation_response"]
    assert {r["content"]["agent"] for r in requests} == {"team-a", "team-b"}
    assert any(f"team-a finished: {tasks['team-a']}" in str(r["content"]) for r in responses)
    assert any(f"team-b finished: {tasks['team-b']}" in str(r["content"]) for r in responses)

    # each worker's memory holds its own task and never the other's
    for worker, other in (("team-a", "team-b"), ("team-b", "team-a")):
        events = (await memory_events(urls[worker]))["events"]
        received = [e for e in events if e["event_type"] == "task_delegation_received"]
        assert any(tasks[worker] in str(e["content"]) for e in received), received
        everything = " ".join(str(e["content"]) for e in events)
        assert tasks[other] not in everything

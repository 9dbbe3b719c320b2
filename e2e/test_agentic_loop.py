"""The agentic loop's configuration from the Agent resource, and dependency handling:
the step limit set in the CRD reaches the runtime, waitForDependencies decides between waiting
and starting now, and a coordinator created before its worker picks the worker up later."""

import httpx
import pytest

from e2e.conftest import (
    DATAPLANE,
    chat,
    create_agent_resource,
    create_custom_resource,
    deploy_and_wait,
    fenced,
    gateway_url,
    memory_events,
    wait_for_resource_ready,
    wait_for_status,
)

pytestmark = pytest.mark.e2e


@pytest.mark.dataplane
async def test_step_limit_from_the_resource_ends_the_loop(test_namespace, shared_modelapi):
    asks_forever = [fenced("tool_call", {"tool": "missing", "arguments": {}})] * 3
    url = deploy_and_wait(create_agent_resource(test_namespace, "loop-limited", shared_modelapi, max_steps=2,
                                                mock_responses=[*asks_forever, "never reached"]), test_namespace)
    response = await chat(url, "keep calling tools")
    assert response.status_code == 200, response.text
    answer = response.json()["choices"][0]["message"]["content"]
    assert "step limit of 2" in answer
    events = (await memory_events(url))["events"]
    assert [e["event_type"] for e in events].count("agent_response") == 1
    # two model calls, each asking for a tool this agent does not have
    assert sum(1 for e in events if e["event_type"] in ("error", "tool_call")) >= 2


async def test_wait_for_dependencies_decides_between_waiting_and_starting(test_namespace):
    waiting = create_agent_resource(test_namespace, "dep-waits", "llm-not-yet")
    create_custom_resource(waiting, test_namespace)
    status = wait_for_status("Agent", "dep-waits", test_namespace, "Waiting", timeout=60)["status"]
    assert "ModelAPI llm-not-yet" in status["message"]

    eager = create_agent_resource(test_namespace, "dep-eager", "llm-not-yet")
    eager["spec"]["waitForDependencies"] = False
    url = deploy_and_wait(eager, test_namespace)
    if not DATAPLANE:
        return
    async with httpx.AsyncClient(timeout=30) as client:
        health = (await client.get(f"{url}/health")).json()
    assert health == {**health, "status": "healthy", "name": "dep-eager"}


async def test_coordinator_created_before_its_worker_gets_it_later(test_namespace, shared_modelapi):
    coordinator = create_agent_resource(
        test_namespace, "early-lead", shared_modelapi, access=["late-worker"],
        mock_responses=[fenced("delegate", {"agent": "late-worker", "task": "late task 7"}), "all done"])
    create_custom_resource(coordinator, test_namespace)
    status = wait_for_status("Agent", "early-lead", test_namespace, "Waiting", timeout=60)["status"]
    assert "Agent late-worker" in status["message"]

    deploy_and_wait(create_agent_resource(test_namespace, "late-worker", shared_modelapi,
                                          mock_responses=["late task 7 handled"]), test_namespace)
    wait_for_status("Agent", "early-lead", test_namespace, "Ready", timeout=60)
    if not DATAPLANE:
        return
    url = gateway_url(test_namespace, "agent", "early-lead")
    wait_for_resource_ready(url)
    async with httpx.AsyncClient(timeout=30) as client:
        card = (await client.get(f"{url}/.well-known/agent")).json()
    assert "task_delegation" in card["capabilities"]

    response = await chat(url, "delegate the late task")
    assert response.json()["choices"][0]["message"]["content"] == "all done"
    responses = (await memory_events(url, event_type="delegation_response"))["events"]
    assert any("late task 7 handled" in str(e["content"]) for e in responses)

"""Upstream KAOS's e2e helpers, called exactly as upstream's test files call them (issue 12):
the positional shapes of create_agent_resource / create_modelapi_resource /
create_mcpserver_resource, wait_for_resource_ready(max_wait, health_path),
async_wait_for_healthy(max_retries, delay) returning the response, get_next_port and
port_forward; agents on the shared ModelAPI with any model name; a client's mock_response."""

import httpx
import pytest

from e2e.conftest import (
    async_wait_for_healthy,
    create_agent_resource,
    create_custom_resource,
    create_mcpserver_resource,
    create_modelapi_resource,
    gateway_url,
    get_next_port,
    port_forward,
    wait_for_deployment,
    wait_for_resource_ready,
)

pytestmark = pytest.mark.e2e  # dataplane per test: the first needs no running container


def test_upstream_agent_shape_is_upstreams_resource():
    resource = create_agent_resource("ns", "mock-proxy", ["echo-server"], agent_name="coordinator",
                                     sub_agents=["worker-1"], reasoning_loop_max_steps=3)
    spec = resource["spec"]
    assert resource["metadata"] == {"name": "coordinator", "namespace": "ns"}
    assert (spec["modelAPI"], spec["mcpServers"], spec["agentNetwork"]) == ("mock-proxy", ["echo-server"],
                                                                            {"access": ["worker-1"]})
    assert "model" not in spec and spec["config"]["reasoningLoopMaxSteps"] == 3
    assert {"name": "MODEL_NAME", "value": "ollama/smollm2:135m"} in spec["config"]["env"]
    assert create_agent_resource("ns", "mock-proxy", [])["metadata"]["name"] == "echo-agent"
    assert create_modelapi_resource("ns")["spec"] == {
        "mode": "Proxy", "proxyConfig": {"models": ["*"], "allowMockResponse": True}}
    assert create_mcpserver_resource("ns")["metadata"]["name"] == "echo-server"


@pytest.mark.dataplane
async def test_upstream_modelapi_answers_a_requests_mock_response(test_namespace):
    create_custom_resource(create_modelapi_resource(test_namespace, "up-proxy"), test_namespace)
    wait_for_deployment(test_namespace, "modelapi-up-proxy", timeout=180)
    url = gateway_url(test_namespace, "modelapi", "up-proxy")
    wait_for_resource_ready(url, max_wait=120, health_path="/health/liveliness")
    async with httpx.AsyncClient(timeout=60) as client:
        response = await client.post(f"{url}/v1/chat/completions", json={
            "model": "gpt-3.5-turbo", "mock_response": "Hello from upstream's mock",
            "messages": [{"role": "user", "content": "hi"}]})
    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["message"]["content"] == "Hello from upstream's mock"


@pytest.mark.dataplane
async def test_upstream_agent_and_echo_server_on_the_shared_modelapi(test_namespace, shared_modelapi):
    create_custom_resource(create_mcpserver_resource(test_namespace, "up-echo"), test_namespace)
    agent = create_agent_resource(test_namespace, shared_modelapi, ["up-echo"], agent_name="up-agent",
                                  model_name="gpt-3.5-turbo")  # any model name on the shared ModelAPI
    create_custom_resource(agent, test_namespace)
    wait_for_deployment(test_namespace, "mcpserver-up-echo", timeout=120)
    wait_for_deployment(test_namespace, "agent-up-agent", timeout=120)

    mcp_url = gateway_url(test_namespace, "mcp", "up-echo")
    async with httpx.AsyncClient(timeout=10) as client:  # upstream's readiness check: a plain GET answers at once
        assert (await client.get(f"{mcp_url}/mcp")).status_code in (400, 405, 406)

    url = gateway_url(test_namespace, "agent", "up-agent")
    assert wait_for_resource_ready(url, max_wait=120, health_path="/ready") is True
    health = await async_wait_for_healthy(url, max_retries=20, delay=0.5)
    assert health.status_code == 200 and health.json()["name"] == "up-agent"
    async with httpx.AsyncClient(timeout=120) as client:
        card = (await client.get(f"{url}/.well-known/agent")).json()
        reply = await client.post(f"{url}/v1/chat/completions", json={
            "model": "up-agent", "messages": [{"role": "user", "content": "say hi"}]})
    assert [skill["name"] for skill in card["skills"]] == ["echo"]
    assert reply.status_code == 200, reply.text
    assert reply.json()["choices"][0]["message"]["content"]


@pytest.mark.dataplane
def test_port_forward_to_an_agent(test_namespace, shared_modelapi):
    create_custom_resource(create_agent_resource(test_namespace, shared_modelapi, [], agent_name="up-forwarded"),
                           test_namespace)
    wait_for_deployment(test_namespace, "agent-up-forwarded", timeout=120)
    local_port = get_next_port()
    forward = port_forward(test_namespace, "agent-up-forwarded", local_port)
    try:
        assert wait_for_resource_ready(f"http://127.0.0.1:{local_port}", max_wait=60) is True
        assert httpx.get(f"http://127.0.0.1:{local_port}/health", timeout=10).json()["name"] == "up-forwarded"
    finally:
        forward.terminate()
        forward.wait(10)

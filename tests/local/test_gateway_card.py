"""An agent's cards through the local gateway name the gateway's URL with the route's prefix
(the gateway sets X-Forwarded-Proto, -Host and -Prefix; the runtime builds the cards' URLs from
them), so an A2A client that knows only the gateway URL talks to the agent through the gateway."""

import json

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.helpers.proto_helpers import get_artifact_text, new_text_message
from a2a.types import Role, SendMessageRequest, TaskState

from kaos.local.gateway import Gateway
from kaos.local.ports import free_port
from kaos.routes import Backend
from tests.local.test_gateway_proxy import running
from tests.support.processes import spawn, wait_until_ok


@pytest.fixture(scope="module")
def agent(tmp_path_factory):
    service = spawn("gw-card", ["-m", "kaos_runtime", "agent"], {
        "AGENT_NAME": "gw-card", "MODEL_NAME": "ollama/smollm2:135m", "MODEL_PRELOAD": "false",
        "DEBUG_MOCK_RESPONSES": json.dumps(["answered through the gateway"]),
    }, str(tmp_path_factory.mktemp("gateway-card")))
    wait_until_ok(service, "/health", timeout=60)
    yield service
    service.stop()


async def test_the_cards_name_the_gateway_url_and_a2a_goes_through_it(agent):
    port = int(agent.url.rsplit(":", 1)[1])
    gateway = Gateway(lambda route: Backend(port))
    gateway_port = free_port()
    public = f"http://127.0.0.1:{gateway_port}/team/agent/gw-card"
    try:
        async with running(gateway, gateway_port):
            async with httpx.AsyncClient(timeout=30) as http:
                card = (await http.get(public + "/.well-known/agent-card.json")).json()
                assert card["url"] == public + "/a2a"
                assert {i["url"] for i in card["supportedInterfaces"]} == {public + "/a2a"}
                assert (await http.get(public + "/.well-known/agent")).json()["url"] == public
                # the gateway's values replace a client's own
                spoofed = await http.get(public + "/.well-known/agent-card.json", headers={
                    "X-Forwarded-Prefix": "/elsewhere", "X-Forwarded-Host": "evil.example"})
                assert spoofed.json()["url"] == public + "/a2a"
                # an A2A client given the gateway URL follows the card, through the gateway
                client = await create_client(public, ClientConfig(streaming=False, httpx_client=http))
                message = new_text_message("hello", role=Role.ROLE_USER)
                results = [item async for item in client.send_message(SendMessageRequest(message=message))]
            task = results[-1].task
            assert task.status.state == TaskState.TASK_STATE_COMPLETED
            assert get_artifact_text(task.artifacts[0]) == "answered through the gateway"
    finally:
        await gateway.aclose()

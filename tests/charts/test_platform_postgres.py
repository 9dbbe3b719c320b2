"""The platform chart's PostgreSQL with pgvector for long-term memory (memory.postgres.deploy):
a StatefulSet, its Service, a generated password in a Secret whose url the operator reads, a
NetworkPolicy letting in agents and the operator; nothing of it without the value."""

from tests.charts.manifests import problems
from tests.charts.rendering import CHARTS, next_release, one, render

NS = "kaos-system"
IMAGE = {"repository": "127.0.0.1:15000/kaos/postgres", "tag": "k1"}


def platform(values=None, chart=str(CHARTS / "kaos")):
    return render(chart, values, namespace=NS, release="kaos")


def deployed(**postgres):
    return {"memory": {"postgres": {"deploy": True, "image": IMAGE, **postgres}}, "networkPolicy": {"enabled": True}}


def test_without_the_value_nothing_of_it_is_rendered():
    docs = platform()
    assert not [d for d in docs if "postgres" in d["metadata"]["name"]]
    env = one(docs, "Deployment", "kaos-operator")["spec"]["template"]["spec"]["containers"][0]["env"]
    assert "KAOS_MEMORY_POSTGRES_URL" not in {e["name"] for e in env}


def test_a_statefulset_its_service_a_password_secret_and_the_operators_url():
    docs = platform(deployed())
    ours = [d for d in docs if d["metadata"]["name"] == "kaos-memory-postgres"]
    assert sorted(d["kind"] for d in ours) == ["ConfigMap", "NetworkPolicy", "Secret", "Service", "StatefulSet"]
    assert [p for obj in ours for p in problems(obj)] == []
    secret = one(docs, "Secret", "kaos-memory-postgres")["stringData"]
    assert len(secret["password"]) == 32
    assert secret["url"] == (f"postgresql://kaos:{secret['password']}@kaos-memory-postgres.{NS}.svc.cluster.local"
                             ":5432/kaos")
    env = one(docs, "Deployment", "kaos-operator")["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "KAOS_MEMORY_POSTGRES_URL",
            "valueFrom": {"secretKeyRef": {"name": "kaos-memory-postgres", "key": "url"}}} in env
    pod = one(docs, "StatefulSet", "kaos-memory-postgres")["spec"]["template"]["spec"]
    (server,) = pod["containers"]
    assert server["image"] == "127.0.0.1:15000/kaos/postgres:k1"
    assert server["command"] == ["/bin/sh", "/etc/kaos-postgres/start.sh"]
    assert server["env"] == [{"name": "POSTGRES_PASSWORD",
                              "valueFrom": {"secretKeyRef": {"name": "kaos-memory-postgres", "key": "password"}}}]
    assert pod["securityContext"]["runAsUser"] == 10001 and server["securityContext"]["readOnlyRootFilesystem"]
    assert {"name": "data", "emptyDir": {}} in pod["volumes"]
    start = one(docs, "ConfigMap", "kaos-memory-postgres")["data"]["start.sh"]
    assert "CREATE EXTENSION IF NOT EXISTS vector" in start and "scram-sha-256" in start


def test_agents_of_every_namespace_and_the_operator_reach_it():
    policy = one(platform(deployed()), "NetworkPolicy", "kaos-memory-postgres")["spec"]
    assert policy["podSelector"]["matchLabels"]["app.kubernetes.io/name"] == "kaos-memory-postgres"
    (rule,) = policy["ingress"]
    assert rule["from"] == [
        {"namespaceSelector": {}, "podSelector": {"matchLabels": {"app.kubernetes.io/component": "agent"}}},
        {"podSelector": {"matchLabels": {"app.kubernetes.io/name": "kaos-operator", "app.kubernetes.io/instance": "kaos"}}},
    ]
    assert rule["ports"] == [{"port": 5432, "protocol": "TCP"}]


def test_persistence_asks_for_a_volume_per_replica():
    spec = one(platform(deployed(persistence={"size": "5Gi", "storageClassName": "fast"})), "StatefulSet")["spec"]
    (claim,) = spec["volumeClaimTemplates"]
    assert claim["spec"]["resources"]["requests"]["storage"] == "5Gi" and claim["spec"]["storageClassName"] == "fast"
    assert all(v["name"] != "data" for v in spec["template"]["spec"]["volumes"])


def test_a_platform_upgrade_leaves_the_postgres_pod_alone(tmp_path):
    """Another version of the chart: the PostgreSQL's pod template stays (its emptyDir holds the memories)."""
    release = next_release(tmp_path)
    assert one(platform(deployed(), str(release)), "StatefulSet")["spec"]["template"] == \
        one(platform(deployed()), "StatefulSet")["spec"]["template"]

"""Agents' memory on a real kube-apiserver: the platform chart's Redis installed with Helm,
and the operator turning spec.memory and replicas into Deployments (or a clear Failed)."""

from __future__ import annotations

import uuid

from kaos.api import API_VERSION
from tests.cluster.platform import apply, deployment_available, helm, install_platform, resource, wait_ready
from tests.support.polling import wait_until


def _agent(name: str, **spec) -> dict:
    return {"apiVersion": API_VERSION, "kind": "Agent", "metadata": {"name": name},
            "spec": {"modelAPI": "llm", "model": "m", **spec}}


def _env(cluster, namespace: str, deployment: str) -> dict:
    found = cluster.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/{deployment}")
    container = found["spec"]["template"]["spec"]["containers"][0]
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


def test_the_platform_chart_deploys_a_redis_for_agents(cluster, platform):
    """A second release (its own namespace, watching one namespace) with memory.redis.deploy."""
    release = f"kaos-mem-{uuid.uuid4().hex[:6]}"
    watched = f"{release}-watched"
    cluster.kubectl("create", "namespace", watched)
    install_platform(cluster, "--set", "memory.redis.deploy=true", "--set", "memory.backend=redis",
                     "--set", "networkPolicy.enabled=true", "--set", f"watchNamespaces[0]={watched}",
                     release=release, namespace=release)
    try:
        name = f"{release}-redis"
        wait_until(lambda: deployment_available(cluster, release, name), 60, interval=0.2,
                   what=f"the Redis Deployment {release}/{name} Available")
        service = cluster.get(f"/api/v1/namespaces/{release}/services/{name}")
        assert service["spec"]["ports"][0]["port"] == 6379
        assert cluster.get(f"/apis/networking.k8s.io/v1/namespaces/{release}/networkpolicies/{name}")
        settings = cluster.get(f"/api/v1/namespaces/{release}/configmaps/{release}-operator-settings")["data"]
        assert settings["KAOS_MEMORY_BACKEND"] == "redis"
        assert settings["KAOS_MEMORY_REDIS_URL"] == f"redis://{name}.{release}.svc.cluster.local:6379/0"
    finally:
        helm(cluster, "uninstall", release, "-n", release)


def test_replicas_with_shared_memory_deploy_and_without_it_fail(cluster, operator, namespace):
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "agent-redis"},
              "stringData": {"url": "redis://redis.elsewhere:6379/0"}}
    modelapi = {"apiVersion": API_VERSION, "kind": "ModelAPI", "metadata": {"name": "llm"},
                "spec": {"mode": "Proxy", "proxyConfig": {"models": ["m"]}}}
    shared = _agent("shared", replicas=2, memory={
        "backend": "redis", "ttlSeconds": 3600,
        "redis": {"url": {"valueFrom": {"secretKeyRef": {"name": "agent-redis", "key": "url"}}}}})
    valued = _agent("valued", memory={"backend": "redis", "redis": {"url": {"value": "redis://r.elsewhere:6379/2"}}})
    platformed = _agent("platformed", replicas=2, memory={"backend": "redis"})
    split = _agent("split", replicas=2)
    apply(cluster, namespace, secret, modelapi, shared, valued, platformed, split)

    wait_ready(cluster, "Agent", "shared", namespace, timeout=90)
    deployment = cluster.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/agent-shared")
    assert deployment["spec"]["replicas"] == 2
    wait_until(lambda: (cluster.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/agent-shared")["status"]
                        .get("readyReplicas")) == 2, 60, interval=0.2, what="two ready replicas")
    env = _env(cluster, namespace, "agent-shared")
    assert env["MEMORY_BACKEND"] == "redis" and env["MEMORY_TTL_SECONDS"] == "3600"
    assert env["REDIS_URL"] == {"secretKeyRef": {"name": "agent-redis", "key": "url"}}
    assert env["MEMORY_KEY_PREFIX"] == f"kaos:{namespace}:agent:shared"
    status = resource(cluster, "Agent", "shared", namespace)["status"]
    assert (status["replicas"], status["readyReplicas"]) == (2, 2)

    wait_ready(cluster, "Agent", "valued", namespace, timeout=90)
    assert _env(cluster, namespace, "agent-valued")["REDIS_URL"] == "redis://r.elsewhere:6379/2"

    # No URL of its own: the platform's Redis (the session's platform deploys one).
    wait_ready(cluster, "Agent", "platformed", namespace, timeout=90)
    env = _env(cluster, namespace, "agent-platformed")
    assert env["REDIS_URL"] == "redis://kaos-redis.kaos-system.svc.cluster.local:6379/0"
    assert deployment_available(cluster, "kaos-system", "kaos-redis")

    failed = wait_until(lambda: (lambda s: s if s.get("phase") == "Failed" else None)(
        (resource(cluster, "Agent", "split", namespace) or {}).get("status") or {}), 60, interval=0.2,
        what="Agent split Failed")
    assert "replicas 2 needs a shared memory backend" in failed["message"]
    assert cluster.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/agent-split") is None

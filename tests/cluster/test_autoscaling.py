"""spec.autoscaling on a real kube-apiserver and kube-controller-manager (whose HPA controller
runs; no metrics server, so it only holds the count within minReplicas..maxReplicas): the HPA
is accepted and owns the replica count, and the operator never sets it: not at install, a
resync, a helm upgrade of the release, nor after a restart. The CRDs' CEL rules refuse what
kaos.crds refuses, with the same message."""

from __future__ import annotations

import json

from kaos import crds
from kaos.api import AGENT, API_VERSION, MODELAPI
from kaos.settings import Settings
from tests.cluster.platform import releases, resource, wait_ready
from tests.support.polling import wait_until

PROXY = {"apiVersion": API_VERSION, "kind": MODELAPI, "metadata": {"name": "llm"},
         "spec": {"mode": "Proxy", "proxyConfig": {"models": ["gpt-4o-mini"]},
                  "autoscaling": {"maxReplicas": 3, "target": {"cpuUtilization": 80}}}}
SCALING = {"minReplicas": 2, "maxReplicas": 6, "target": {"cpuUtilization": 70}}


def agent(name: str, instructions: str, **spec) -> dict:
    return {"apiVersion": API_VERSION, "kind": AGENT, "metadata": {"name": name},
            "spec": {"modelAPI": "llm", "model": "gpt-4o-mini",
                     "config": {"instructions": instructions, "memory": {"enabled": False}}, **spec}}


def apply(cluster, namespace: str, *objects: dict, check: bool = True):
    return cluster.kubectl("apply", "--server-side", "--field-manager=argocd-controller", "-n", namespace, "-f", "-",
                           input="\n---\n".join(json.dumps(o) for o in objects), check=check)


def deployment(cluster, namespace: str, name: str) -> dict:
    return cluster.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}")


def scale(cluster, namespace: str, name: str, replicas: int) -> None:
    """What the HPA controller does: a write of the scale subresource."""
    cluster.kubectl("scale", "deployment", name, "-n", namespace, f"--replicas={replicas}")


def replicas_seen(cluster, namespace: str, name: str, count: int) -> bool:
    """The Deployment asks for ``count`` pods, has them ready, and the Agent's status (the operator's
    last resync) says so."""
    found = deployment(cluster, namespace, f"agent-{name}")
    status = (resource(cluster, AGENT, name, namespace) or {}).get("status") or {}
    return (found["spec"]["replicas"] == count and (found.get("status") or {}).get("readyReplicas") == count
            and (status.get("replicas"), status.get("readyReplicas")) == (count, count))


def instructions_of(cluster, namespace: str, name: str) -> str:
    container = deployment(cluster, namespace, f"agent-{name}")["spec"]["template"]["spec"]["containers"][0]
    return {e["name"]: e.get("value") for e in container["env"]}["AGENT_INSTRUCTIONS"]


def test_the_hpa_owns_the_replica_count_through_resyncs_upgrades_and_restarts(cluster, operator, namespace):
    apply(cluster, namespace, PROXY, agent("scaled", "Answer briefly.", autoscaling=SCALING))
    wait_ready(cluster, MODELAPI, "llm", namespace)
    wait_ready(cluster, AGENT, "scaled", namespace)

    hpa = cluster.get(f"/apis/autoscaling/v2/namespaces/{namespace}/horizontalpodautoscalers/agent-scaled")
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "agent-scaled"}
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 6)
    assert cluster.get(f"/apis/autoscaling/v2/namespaces/{namespace}/horizontalpodautoscalers/modelapi-llm")
    # The chart renders no replicas, so the apiserver defaulted 1 and the HPA controller raised it to minReplicas.
    wait_until(lambda: replicas_seen(cluster, namespace, "scaled", 2), 90, interval=0.2,
               what="the HPA controller's minReplicas 2 in the Deployment and the Agent's status")
    managed = deployment(cluster, namespace, "agent-scaled")["metadata"]["managedFields"]
    helm_fields = [entry["fieldsV1"]["f:spec"] for entry in managed if "helm" in entry["manager"]]
    assert helm_fields and all("f:replicas" not in fields for fields in helm_fields), managed

    # Scaled as the HPA would on load: kept through the operator's resyncs, which see it.
    scale(cluster, namespace, "agent-scaled", 4)
    wait_until(lambda: replicas_seen(cluster, namespace, "scaled", 4), 60, interval=0.2,
               what="4 replicas in the Deployment and the Agent's status")
    revision = releases(cluster, namespace)["agent-scaled"]

    # An edit: a helm upgrade of the release keeps the live count.
    apply(cluster, namespace, agent("scaled", "Answer in French.", autoscaling=SCALING))
    wait_until(lambda: releases(cluster, namespace)["agent-scaled"] == revision + 1, 30, interval=0.1,
               what="the upgrade of agent-scaled")
    wait_ready(cluster, AGENT, "scaled", namespace)
    assert instructions_of(cluster, namespace, "scaled") == "Answer in French."
    wait_until(lambda: replicas_seen(cluster, namespace, "scaled", 4), 60, interval=0.2,
               what="4 replicas after the upgrade")

    # A restart, with an edit made while the operator was down: its install pass upgrades again.
    scale(cluster, namespace, "agent-scaled", 5)
    wait_until(lambda: replicas_seen(cluster, namespace, "scaled", 5), 60, interval=0.2, what="5 replicas")
    operator.stop()
    apply(cluster, namespace, agent("scaled", "Answer in German.", autoscaling=SCALING))
    operator.restart()
    wait_until(lambda: releases(cluster, namespace)["agent-scaled"] == revision + 2, 30, interval=0.1,
               what="the upgrade by the restarted operator")
    wait_ready(cluster, AGENT, "scaled", namespace)
    assert instructions_of(cluster, namespace, "scaled") == "Answer in German."
    wait_until(lambda: "release modelapi-llm is up to date" in operator.tail(10_000), 30, interval=0.1,
               what="the restarted operator's pass over the unchanged ModelAPI")
    wait_until(lambda: replicas_seen(cluster, namespace, "scaled", 5), 60, interval=0.2,
               what="5 replicas after the restart")


def test_the_crds_cel_rules_refuse_what_kaos_crds_refuses_with_the_same_message(cluster, platform, namespace):
    cases = [
        agent("both", "x", replicas=2, autoscaling=SCALING),
        agent("inverted", "x", autoscaling={**SCALING, "minReplicas": 7}),
        agent("two-targets", "x", autoscaling={"maxReplicas": 3, "target": {"cpuUtilization": 50,
                                                                             "requestsInFlight": 2}}),
        {**PROXY, "metadata": {"name": "hosted"},
         "spec": {"mode": "Hosted", "hostedConfig": {"model": "smollm2:135m"}, "autoscaling": SCALING}},
        {"apiVersion": API_VERSION, "kind": "MCPServer", "metadata": {"name": "external"},
         "spec": {"runtime": "python-string", "url": "https://mcp.example.com/mcp", "autoscaling": SCALING}},
    ]
    crd_dir = Settings().crd_dir
    for case in cases:
        try:
            crds.validate({**case, "metadata": {**case["metadata"], "namespace": namespace}}, crd_dir)
            raise AssertionError(f"kaos.crds accepted {case['metadata']['name']}")
        except crds.ValidationError as error:
            [problem] = error.problems
        path, message = problem.split(": ", 1)
        result = apply(cluster, namespace, case, check=False)
        assert result.returncode != 0, f"the apiserver accepted {case['metadata']['name']}"
        assert f"{path}: Invalid value" in result.stderr and message in result.stderr, (problem, result.stderr)
        assert resource(cluster, case["kind"], case["metadata"]["name"], namespace) is None

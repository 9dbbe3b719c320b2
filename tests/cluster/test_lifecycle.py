"""Lifecycle on a real apiserver: edits roll the release, late dependencies unblock their
dependents, deletion runs the finalizer, namespaces delete cleanly, restarts resume, and the
CRD schema refuses invalid resources itself."""

from __future__ import annotations

import json

from kaos.api import AGENT, API_VERSION, FINALIZER, MODELAPI
from tests.cluster.platform import releases, resource, wait_ready
from tests.support.polling import wait_until

MODELAPI = {
    "apiVersion": API_VERSION, "kind": MODELAPI, "metadata": {"name": "llm"},
    "spec": {"mode": "Proxy", "proxyConfig": {"models": ["gpt-4o-mini"]}},
}


def agent(name: str, instructions: str = "Answer briefly.", **spec) -> dict:
    return {"apiVersion": API_VERSION, "kind": AGENT, "metadata": {"name": name},
            "spec": {"modelAPI": "llm", "model": "gpt-4o-mini", "config": {"instructions": instructions}, **spec}}


def apply(cluster, namespace: str, *objects: dict) -> None:
    cluster.kubectl("apply", "--server-side", "--field-manager=argocd-controller", "-n", namespace, "-f", "-",
                    input="\n---\n".join(json.dumps(o) for o in objects))


def test_an_edit_rolls_the_release(cluster, operator, namespace):
    apply(cluster, namespace, MODELAPI, agent("editor"))
    wait_ready(cluster, "Agent", "editor", namespace)
    assert releases(cluster, namespace)["agent-editor"] == 1
    apply(cluster, namespace, agent("editor", instructions="Answer in French."))
    wait_until(lambda: releases(cluster, namespace)["agent-editor"] == 2, 30, interval=0.1, what="revision 2")
    edited = wait_ready(cluster, "Agent", "editor", namespace)
    assert edited["metadata"]["generation"] == edited["status"]["observedGeneration"] == 2
    env = cluster.kubectl_json("get", "deployment", "agent-editor", "-n", namespace)["spec"]["template"]["spec"]
    values = {e["name"]: e.get("value") for e in env["containers"][0]["env"]}
    assert values["AGENT_INSTRUCTIONS"] == "Answer in French."


def test_a_dependency_created_later_unblocks_its_dependent(cluster, operator, namespace):
    apply(cluster, namespace, agent("early"))
    def waiting_with_finalizer():
        found = resource(cluster, "Agent", "early", namespace) or {}
        finalizers = found.get("metadata", {}).get("finalizers") or []
        return found if (found.get("status") or {}).get("phase") == "Waiting" and finalizers else None

    # kopf adds the finalizer and the status in separate writes: wait for both.
    waiting = wait_until(waiting_with_finalizer, 30, interval=0.1, what="Waiting with the finalizer")
    assert "ModelAPI llm (not found)" in waiting["status"]["message"]
    assert FINALIZER in waiting["metadata"]["finalizers"]
    assert "agent-early" not in releases(cluster, namespace)

    apply(cluster, namespace, MODELAPI)
    ready = wait_ready(cluster, "Agent", "early", namespace)["status"]
    modelapi_url = f"http://modelapi-llm.{namespace}.svc.cluster.local:8000"
    assert ready["endpoint"] == f"http://agent-early.{namespace}.svc.cluster.local:8000"
    assert resource(cluster, "ModelAPI", "llm", namespace)["status"]["endpoint"] == modelapi_url
    pod = cluster.kubectl_json("get", "deployment", "agent-early", "-n", namespace)["spec"]["template"]["spec"]
    env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
    assert env["MODEL_API_URL"] == modelapi_url and env["MODEL_NAME"] == "gpt-4o-mini"


def test_deleting_runs_the_finalizer_and_uninstalls_the_release(cluster, operator, namespace):
    apply(cluster, namespace, MODELAPI, agent("doomed"))
    ready = wait_ready(cluster, "Agent", "doomed", namespace)
    assert FINALIZER in ready["metadata"]["finalizers"]
    cluster.kubectl("delete", "agent", "doomed", "-n", namespace, "--wait=false")
    wait_until(lambda: resource(cluster, "Agent", "doomed", namespace) is None, 30, interval=0.1, what="agent gone")
    assert "agent-doomed" not in releases(cluster, namespace)
    assert cluster.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/agent-doomed") is None


def test_deleting_a_namespace_with_resources_does_not_wedge(cluster, operator, namespace):
    apply(cluster, namespace, MODELAPI, agent("a"), agent("b"))
    for name in ("a", "b"):
        wait_ready(cluster, "Agent", name, namespace)
    cluster.kubectl("delete", "namespace", namespace, "--wait=false")
    wait_until(lambda: cluster.get(f"/api/v1/namespaces/{namespace}") is None, 60, interval=0.2,
               what=f"namespace {namespace} deleted")


def test_an_operator_restart_resumes_without_duplicate_releases(cluster, operator, namespace):
    apply(cluster, namespace, MODELAPI, agent("steady"), agent("edited-while-down"))
    for name in ("steady", "edited-while-down"):
        wait_ready(cluster, "Agent", name, namespace)
    before = releases(cluster, namespace)
    operator.stop()
    apply(cluster, namespace, agent("edited-while-down", instructions="Changed while the operator was down."))
    operator.restart()

    wait_until(lambda: releases(cluster, namespace)["agent-edited-while-down"] == 2, 30, interval=0.1,
               what="the edit made while the operator was down applied")
    # What did not change gets no new revision: the operator compares with the deployed release.
    for release in ("agent-steady", "modelapi-llm"):
        wait_until(lambda: f"release {release} is up to date" in operator.tail(10_000), 30, interval=0.1,
                   what=f"the restarted operator to find {release} up to date")
    assert releases(cluster, namespace) == {**before, "agent-edited-while-down": 2}

    apply(cluster, namespace, agent("after-restart"))
    wait_ready(cluster, "Agent", "after-restart", namespace)
    assert set(releases(cluster, namespace)) == set(before) | {"agent-after-restart"}
    assert wait_ready(cluster, "Agent", "steady", namespace)


def test_the_crd_schema_refuses_an_invalid_resource_naming_the_field(cluster, platform, namespace):
    result = cluster.kubectl("apply", "--server-side", "-n", namespace, "-f", "-", check=False,
                             input=json.dumps({**agent("bad"), "spec": {
                                 "modelAPI": "llm", "config": {"reasoningLoopMaxSteps": 50}}}))
    assert result.returncode != 0
    assert "spec.config.reasoningLoopMaxSteps" in result.stderr, result.stderr
    assert resource(cluster, "Agent", "bad", namespace) is None



def test_a_deployment_deleted_by_hand_comes_back(cluster, operator, namespace):
    apply(cluster, namespace, MODELAPI, agent("resilient"))
    wait_ready(cluster, "Agent", "resilient", namespace)
    cluster.kubectl("delete", "deployment", "agent-resilient", "-n", namespace, "--wait=true")
    wait_until(lambda: cluster.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/agent-resilient"), 30,
               interval=0.1, what="the operator to restore the Deployment")
    wait_ready(cluster, "Agent", "resilient", namespace)

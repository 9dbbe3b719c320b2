"""What the operator reads of the cluster: kopf's indices, keyed by the labels the charts set."""

import pytest

from kaos.operator.world import World, deployment_key, indexed, replica_counts
from kaos.reconcile import Ref


@pytest.mark.parametrize(
    "labels, key",
    [
        ({"app.kubernetes.io/name": "agent", "kaos.tools/agent": "coord"}, Ref("Agent", "ns", "coord")),
        ({"app.kubernetes.io/name": "modelapi", "kaos.tools/modelapi": "llm"}, Ref("ModelAPI", "ns", "llm")),
        ({"app.kubernetes.io/name": "mcpserver", "kaos.tools/mcpserver": "t"}, Ref("MCPServer", "ns", "t")),
        ({"app.kubernetes.io/name": "agent"}, None),
        ({"app.kubernetes.io/name": "other", "kaos.tools/other": "x"}, None),
    ],
)
def test_deployment_key_comes_from_the_chart_labels(labels, key):
    assert deployment_key({"metadata": {"namespace": "ns", "labels": labels}}) == key


def test_replica_counts_and_world_lookups():
    assert replica_counts({"status": {"replicas": 2, "readyReplicas": 1}}) == (1, 2)
    assert replica_counts({}) == (0, 0)
    ref = Ref("Agent", "ns", "a")
    deleting = {"metadata": {"name": "a", "deletionTimestamp": "2026-01-01T00:00:00Z"}}
    world = World({ref: [deleting]}, {}, {}, {ref: [(1, 1)]})
    assert world.get(ref) is None, "an object being deleted counts as gone"
    assert world.get(Ref("ModelAPI", "ns", "x")) is None
    assert world.replicas(ref) == (1, 1) and world.replicas(Ref("Agent", "ns", "b")) == (None, None)


def test_the_indices_keep_what_plans_read_not_managed_fields_or_kopfs_annotations():
    body = {"apiVersion": "kaos.tools/v1alpha1", "kind": "Agent", "spec": {"model": "m"}, "status": {"ready": True},
            "metadata": {"name": "a", "namespace": "ns", "uid": "u", "generation": 2, "resourceVersion": "7",
                         "labels": {"team": "x"}, "managedFields": [{"manager": "kubectl"}] * 50,
                         "annotations": {"kaos.tools/last-handled-configuration": "{...}"}}}
    kept = indexed(body)
    assert kept["metadata"] == {"name": "a", "namespace": "ns", "uid": "u", "generation": 2, "resourceVersion": "7",
                                "labels": {"team": "x"}}
    assert kept["spec"] == body["spec"] and kept["status"] == body["status"] and kept["kind"] == "Agent"
    kept["spec"]["model"] = "changed"
    assert body["spec"]["model"] == "m", "a detached copy"

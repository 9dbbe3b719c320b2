"""Drift repair on a real apiserver: an object of a release deleted or edited by hand (not the
Deployment alone) is noticed from its watch event and the release applied again, once."""

from __future__ import annotations

import json
import time

import pytest

from tests.cluster.platform import HELM3, releases, start_operator, wait_ready
from tests.cluster.test_lifecycle import MODELAPI, agent, apply
from tests.support.polling import wait_until


def _path(namespace: str, kind: str, name: str) -> str:
    return {"service": f"/api/v1/namespaces/{namespace}/services/{name}",
            "networkpolicy": f"/apis/networking.k8s.io/v1/namespaces/{namespace}/networkpolicies/{name}",
            "httproute": f"/apis/gateway.networking.k8s.io/v1/namespaces/{namespace}/httproutes/{name}"}[kind]


def _stays(read, value, seconds: float = 3.0) -> None:
    """An observation window: ``read()`` stays ``value`` (a repair that woke itself would show)."""
    ends = time.monotonic() + seconds
    while time.monotonic() < ends:
        assert read() == value
        time.sleep(0.2)


@pytest.fixture
def helm3_operator(cluster, operator, namespace):
    """The session's operator (Helm 4) replaced, for this test, by one on Helm 3 watching the
    test's namespace only; restored afterwards."""
    operator.stop()
    helm3 = start_operator(cluster, name="operator-helm3",
                           extra_env={"KAOS_HELM": str(HELM3), "KAOS_WATCH_NAMESPACES": namespace})
    try:
        yield helm3
    finally:
        helm3.stop()
        operator.restart()


def _edit_route(cluster, namespace: str, name: str) -> list:
    """Change the path of the HTTPRoute's first rule with kubectl patch; its rules before."""
    rules = cluster.get(_path(namespace, "httproute", name))["spec"]["rules"]
    edited = json.loads(json.dumps(rules))
    edited[0]["matches"][0]["path"]["value"] = "/hijacked"
    cluster.kubectl("patch", "httproute", name, "-n", namespace, "--type=merge",
                    "-p", json.dumps({"spec": {"rules": edited}}))
    return rules


def test_a_service_and_a_network_policy_deleted_by_hand_come_back(cluster, operator, namespace):
    apply(cluster, namespace, MODELAPI, agent("drifty"))
    wait_ready(cluster, "Agent", "drifty", namespace)
    revision = releases(cluster, namespace)["agent-drifty"]
    for kind in ("service", "networkpolicy"):
        before = cluster.get(_path(namespace, kind, "agent-drifty"))
        assert before is not None, kind
        cluster.kubectl("delete", kind, "agent-drifty", "-n", namespace, "--wait=true")
        back = wait_until(lambda: cluster.get(_path(namespace, kind, "agent-drifty")), 30, interval=0.1,
                          what=f"the operator to restore the {kind}")
        assert back["metadata"]["uid"] != before["metadata"]["uid"]
        assert back["spec"] == {**before["spec"], **({"clusterIP": back["spec"]["clusterIP"],
                                                      "clusterIPs": back["spec"]["clusterIPs"]}
                                                     if kind == "service" else {})}
        revision += 1
        wait_until(lambda: releases(cluster, namespace)["agent-drifty"] == revision, 30, interval=0.1,
                   what=f"revision {revision}")
    _stays(lambda: releases(cluster, namespace)["agent-drifty"], revision)
    assert "release agent-drifty drifted (Service agent-drifty: deleted)" in operator.tail(50_000)


def test_an_httproute_edited_by_hand_is_restored(cluster, operator, namespace):
    """Helm 4 applies server-side: the edit makes kubectl-patch the owner of .spec.rules, and only
    an upgrade forcing conflicts takes them back (a plain one fails on the conflict)."""
    apply(cluster, namespace, MODELAPI, agent("routed"))
    wait_ready(cluster, "Agent", "routed", namespace)
    revision = releases(cluster, namespace)["agent-routed"]
    rules = _edit_route(cluster, namespace, "agent-routed")
    wait_until(lambda: cluster.get(_path(namespace, "httproute", "agent-routed"))["spec"]["rules"] == rules, 30,
               interval=0.1, what="the operator to restore the HTTPRoute's rules")
    wait_until(lambda: releases(cluster, namespace)["agent-routed"] == revision + 1, 30, interval=0.1,
               what="one more revision")
    _stays(lambda: releases(cluster, namespace)["agent-routed"], revision + 1)
    assert "release agent-routed drifted (HTTPRoute agent-routed: .spec.rules" in operator.tail(50_000)


def test_with_helm3_an_httproute_edit_is_seen_once_but_helm_does_not_revert_it(cluster, helm3_operator, namespace):
    """Helm 3 patches a custom resource with a two-way JSON merge patch between the old and the
    new manifest, blind to the live object: an upgrade with the same values changes nothing of
    it. The operator sees the drift, upgrades once, and does not loop; the edit stays (a known
    limit, docs/operator.md "Drift repair")."""
    apply(cluster, namespace, MODELAPI, agent("routed"))
    wait_ready(cluster, "Agent", "routed", namespace)
    revision = releases(cluster, namespace)["agent-routed"]
    _edit_route(cluster, namespace, "agent-routed")
    wait_until(lambda: releases(cluster, namespace)["agent-routed"] == revision + 1, 30, interval=0.1,
               what="the repair's upgrade")
    _stays(lambda: releases(cluster, namespace)["agent-routed"], revision + 1)
    route = cluster.get(_path(namespace, "httproute", "agent-routed"))
    assert route["spec"]["rules"][0]["matches"][0]["path"]["value"] == "/hijacked"
    assert "release agent-routed drifted (HTTPRoute agent-routed: .spec.rules" in helm3_operator.tail(50_000)

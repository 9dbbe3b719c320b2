"""The operator sends Triggers' runs to agents: with NetworkPolicies on, each agent's policy
(the one agentNetwork.access shapes) lets the operator's pods in, from the platform chart's
settings through the operator's plan to the agent chart, as the operator renders it."""

from kaos.helm import Helm
from kaos.reconcile import Ref, plan
from kaos.settings import REPO_CHARTS_DIR, Settings
from tests.charts.rendering import one, render
from tests.reconcile.builders import NS, agent, endpoint_of, modelapi

OPERATOR_NS = "kaos-system"


def operator_settings(values: dict) -> tuple[Settings, dict]:
    """The settings the chart's operator reads (its ConfigMap, its namespace from the downward
    API; the charts of this checkout, not the image's) and the labels of its pods."""
    docs = render("kaos", values, namespace=OPERATOR_NS, release="kaos")
    data = one(docs, "ConfigMap", "kaos-operator-settings")["data"]
    labels = one(docs, "Deployment", "kaos-operator")["spec"]["template"]["metadata"]["labels"]
    return Settings.from_env({**data, "KAOS_OPERATOR_NAMESPACE": OPERATOR_NS,
                              "KAOS_CHARTS_DIR": str(REPO_CHARTS_DIR)}), labels


async def rendered_policy(resource: dict, settings: Settings, observed: list[dict]) -> dict:
    known = {Ref(o["kind"], NS, o["metadata"]["name"]): o for o in observed}
    result = plan(resource, known, settings, endpoint_of)
    objects = await Helm(settings).render(result.chart, result.release, NS, result.values)
    return next(o for o in objects if o["kind"] == "NetworkPolicy")


def admits(policy: dict, namespace: str, labels: dict) -> bool:
    """Whether a pod with ``labels`` in ``namespace`` may reach the policy's pods (NetworkPolicy peer rules)."""
    for rule in policy["spec"]["ingress"]:
        for peer in rule["from"]:
            pods = (peer.get("podSelector") or {}).get("matchLabels") or {}
            namespaces = (peer.get("namespaceSelector") or {}).get("matchLabels")
            in_namespace = (namespace == NS) if namespaces is None else \
                namespaces.items() <= {"kubernetes.io/metadata.name": namespace}.items()
            if in_namespace and pods.items() <= labels.items():
                return True
    return False


async def test_every_agents_policy_admits_the_operators_pods_and_only_them():
    settings, operator_labels = operator_settings({"networkPolicy": {"enabled": True}})
    for target in (agent("reporter"), agent("coordinator", access=["worker"])):
        policy = await rendered_policy(target, settings, [modelapi(), agent("worker")])
        assert admits(policy, OPERATOR_NS, operator_labels), policy["spec"]["ingress"]
        assert not admits(policy, OPERATOR_NS, {"app.kubernetes.io/name": "kaos-console",
                                                "app.kubernetes.io/instance": "kaos"})
        assert not admits(policy, NS, operator_labels)  # the operator's labels elsewhere let nothing in
        assert not admits(policy, "other", {})
    model_policy = await rendered_policy(modelapi(), settings, [])
    assert not admits(model_policy, OPERATOR_NS, operator_labels)  # runs go to agents only


async def test_an_operator_without_its_pod_labels_adds_no_rule():
    settings = Settings(network_policy_enabled=True, operator_namespace=OPERATOR_NS)
    policy = await rendered_policy(agent("reporter"), settings, [modelapi()])
    assert all("namespaceSelector" not in peer for peer in policy["spec"]["ingress"][0]["from"])

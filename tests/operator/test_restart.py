"""Nothing is lost on operator restart: resume applies what changed while it was down, status is kept.

(Against kmock no release history exists, so every release is applied again; tests/cluster shows that
unchanged releases get no new revision on a real cluster.)"""

from tests.operator.test_lifecycle import agent, proxy_api
from tests.support.polling import eventually


async def test_resume_after_restart_reapplies_releases(start_operator):
    async with start_operator() as first:
        cluster = first.cluster
        await cluster.create("ModelAPI", "llm", proxy_api())
        await cluster.create("Agent", "solo", agent())
        await eventually(lambda: cluster.status("Agent", "solo").get("ready"))

    await cluster.patch_spec("Agent", "solo", {"replicas": 2})  # changed while the operator was down

    async with start_operator() as second:
        await eventually(lambda: second.helm.applied("agent-solo") and second.helm.applied("modelapi-llm"))
        assert second.helm.applied("agent-solo")[-1].values["replicas"] == 2
        await eventually(lambda: cluster.status("Agent", "solo").get("readyReplicas") == 2)
        assert cluster.status("Agent", "solo")["phase"] == "Ready"

"""CRDs that upgrade with the chart: an installation of the previous platform chart (commit
d769c49, CRDs in crds/, which Helm never upgrades) with the quickstart's resources Ready and
their memory in the platform's Redis is upgraded to this chart with a CRD schema change (a new
optional Agent field), which a resource uses after the upgrade, and with new versions of the
workload charts, which the upgraded operator rolls out to every release. Nothing is lost, no
resource is un-Ready for longer than its Deployment's rolling update (measured by polling them
through the upgrade), the agents keep their memory's address, and `helm rollback` works.

What kwok cannot show: a conversation continuing across the upgrade. Its nodes run no
containers (a pod is Running and Ready by status alone), so no agent process and no Redis
process hold a session here. The test checks what a session depends on in the cluster (each
agent's Redis URL and key prefix are the same after the upgrade, the Redis Deployment's pod
template is not changed by an upgrade of this chart: tests/charts/test_platform_chart.py), and
tests/runtime/test_redis_memory.py shows a session continuing on another runtime process."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kaos.api import AGENT, KINDS
from tests.cluster.platform import NAMESPACE, RELEASE, helm, resource, start_operator, wait_ready
from tests.cluster.test_reconcile import EXAMPLES, manifests
from tests.gitops.platform import KAOS_CRDS, crd, remove_platform, wait_operator_available
from tests.gitops.readiness import INTERVAL, ReadinessWatch
from tests.gitops.release import charts_with_a_new_agent_field, deployment, rolled_to
from tests.gitops.tools import ROOT
from tests.support.polling import wait_until

pytestmark = pytest.mark.cluster

PREVIOUS = "d769c49"  # the last commit whose platform chart shipped its CRDs in crds/
QUICKSTART = EXAMPLES / "quickstart"
QUICKSTART_RESOURCES = [(item["kind"], item["metadata"]["name"]) for item in manifests(QUICKSTART)]
MEMORY = ("--set", "memory.redis.deploy=true", "--set", "memory.backend=redis")  # every install and upgrade
MEMORY_ENV = ("MEMORY_BACKEND", "REDIS_URL", "MEMORY_KEY_PREFIX")
# How much later than its Deployment's rollout a resource may turn Ready again: the operator
# hears of the Deployment's status by its watch and writes the resource's status after it.
STATUS_LAG = 3.0
BLIND = 5.0  # the longest the watch may go without an answer (429s while the Agent CRD changes)


def previous_chart(folder: Path) -> Path:
    folder.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", PREVIOUS, "charts/kaos"], cwd=ROOT, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    return folder / "charts" / "kaos"


def agent_fields(plane) -> set[str]:
    schema = crd(plane, "agents.kaos.tools")["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return set(schema["properties"]["spec"]["properties"])


def wait_all_ready(plane, namespace: str) -> None:
    for item in manifests(QUICKSTART):
        wait_ready(plane, item["kind"], item["metadata"]["name"], namespace, timeout=90)


def memory_env(plane, namespace: str, name: str) -> dict[str, str]:
    """Where the agent's sessions live: its memory backend, Redis URL and key prefix."""
    container = deployment(plane, namespace, AGENT, name)["spec"]["template"]["spec"]["containers"][0]
    return {env["name"]: env.get("value") for env in container["env"] if env["name"] in MEMORY_ENV}


def test_upgrade_from_the_previous_chart_brings_the_new_schema_and_rolls_back(gitops_cluster, tmp_path):
    plane = gitops_cluster
    remove_platform(plane)
    old_chart = previous_chart(tmp_path / "previous")
    assert (old_chart / "crds").is_dir()
    charts, versions = charts_with_a_new_agent_field(tmp_path / "next")
    namespace = "upgrade"
    helm(plane, "install", RELEASE, str(old_chart), "--namespace", NAMESPACE, "--create-namespace", *MEMORY)
    operator = None
    try:
        wait_operator_available(plane)
        operator = start_operator(plane, name="operator-previous")
        plane.kubectl("create", "namespace", namespace)
        plane.kubectl("apply", "-n", namespace, "-f", str(QUICKSTART))
        wait_all_ready(plane, namespace)
        assert "owner" not in agent_fields(plane)
        agents = [item["metadata"]["name"] for item in manifests(QUICKSTART) if item["kind"] == AGENT]
        memory = {name: memory_env(plane, namespace, name) for name in agents}
        assert all(env["MEMORY_BACKEND"] == "redis" and env["REDIS_URL"] for env in memory.values()), memory

        with ReadinessWatch(plane, namespace, KINDS) as watch:
            refused = helm(plane, "upgrade", RELEASE, str(charts / "kaos"), "-n", NAMESPACE, *MEMORY, check=False)
            assert refused.returncode != 0 and "invalid ownership metadata" in refused.stderr, refused.stderr
            helm(plane, "upgrade", RELEASE, str(charts / "kaos"), "-n", NAMESPACE, "--take-ownership", *MEMORY)
            for name in KAOS_CRDS:
                annotations = crd(plane, name)["metadata"]["annotations"]
                assert annotations["helm.sh/resource-policy"] == "keep"
                assert annotations["meta.helm.sh/release-name"] == RELEASE, annotations
            assert "owner" in agent_fields(plane)
            wait_operator_available(plane)
            operator.stop()  # the new operator pod, with the new chart's CRD copy and workload charts
            operator = start_operator(plane, name="operator-upgraded", charts_dir=charts)
            wait_until(lambda: rolled_to(plane, namespace, QUICKSTART_RESOURCES, versions), 120, interval=0.2,
                       what="every release of the quickstart rolled out with its new chart version")
            wait_all_ready(plane, namespace)

        assert watch.errors == [] and watch.samples > 10 and watch.blind <= BLIND, (watch.samples, watch.blind, watch.errors)
        unready, rollouts = watch.unready.longest(), watch.rollouts.longest()
        print(f"\nlongest un-Ready (s): {unready}\nlongest rollout (s): {rollouts}\nsamples {watch.samples}, blind {watch.blind:.1f} s")
        for item in manifests(QUICKSTART):
            kind, name = item["kind"], item["metadata"]["name"]
            deployment_name = ReadinessWatch.deployment_of(kind, name)
            assert len(watch.generations[deployment_name]) > 1, f"{deployment_name} did not roll"
            assert unready[(kind, name)] <= rollouts[(deployment_name,)] + STATUS_LAG + INTERVAL, \
                f"{kind} {name} un-Ready for {unready[(kind, name)]:.1f} s, its rollout took {rollouts[(deployment_name,)]:.1f} s"
        assert {name: memory_env(plane, namespace, name) for name in agents} == memory

        worker = next(item for item in manifests(QUICKSTART) if item["kind"] == AGENT)["metadata"]["name"]
        plane.kubectl("patch", "agent", worker, "-n", namespace, "--type", "merge", "-p", '{"spec": {"owner": "team-a"}}')
        assert wait_ready(plane, AGENT, worker, namespace)["spec"]["owner"] == "team-a"

        helm(plane, "rollback", RELEASE, "1", "-n", NAMESPACE)
        assert all(crd(plane, name) for name in KAOS_CRDS), "a rollback deleted a kept CRD"
        wait_operator_available(plane)
        wait_all_ready(plane, namespace)
        assert resource(plane, AGENT, worker, namespace)["spec"]["owner"] == "team-a"

        plane.kubectl("delete", "-n", namespace, "-f", str(QUICKSTART), "--wait=true", "--timeout=90s")
    finally:
        if operator is not None:
            operator.stop()
        helm(plane, "uninstall", RELEASE, "-n", NAMESPACE, "--wait", check=False)
        remove_platform(plane)

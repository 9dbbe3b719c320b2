"""CRDs that upgrade with the chart: an installation of the previous platform chart (commit
d769c49, CRDs in crds/, which Helm never upgrades) with the quickstart's resources Ready is
upgraded to this chart with a CRD schema change (a new optional Agent field), which a resource
uses after the upgrade; nothing is lost, everything stays Ready, and `helm rollback` works."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from kaos.api import AGENT
from tests.cluster.platform import CHARTS, NAMESPACE, RELEASE, helm, resource, start_operator, wait_ready
from tests.cluster.test_reconcile import EXAMPLES, manifests
from tests.gitops.platform import KAOS_CRDS, crd, remove_platform, wait_operator_available
from tests.gitops.tools import ROOT

pytestmark = pytest.mark.cluster

PREVIOUS = "d769c49"  # the last commit whose platform chart shipped its CRDs in crds/
QUICKSTART = EXAMPLES / "quickstart"


def previous_chart(folder: Path) -> Path:
    folder.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", PREVIOUS, "charts/kaos"], cwd=ROOT, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    return folder / "charts" / "kaos"


def charts_with_a_new_agent_field(folder: Path) -> Path:
    """This checkout's charts, the Agent CRD with one more optional field: spec.owner."""
    charts = folder / "charts"
    shutil.copytree(CHARTS, charts)
    path = charts / "kaos" / "files" / "crds" / "agent.yaml"
    agent = yaml.safe_load(path.read_text())
    spec = agent["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["properties"]["owner"] = {"type": "string", "description": "Who answers for this agent."}
    path.write_text(yaml.safe_dump(agent, sort_keys=False))
    return charts


def agent_fields(plane) -> set[str]:
    schema = crd(plane, "agents.kaos.tools")["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return set(schema["properties"]["spec"]["properties"])


def wait_all_ready(plane, namespace: str) -> None:
    for item in manifests(QUICKSTART):
        wait_ready(plane, item["kind"], item["metadata"]["name"], namespace, timeout=90)


def test_upgrade_from_the_previous_chart_brings_the_new_schema_and_rolls_back(gitops_cluster, tmp_path):
    plane = gitops_cluster
    remove_platform(plane)
    old_chart = previous_chart(tmp_path / "previous")
    assert (old_chart / "crds").is_dir()
    charts = charts_with_a_new_agent_field(tmp_path / "next")
    namespace = "upgrade"
    helm(plane, "install", RELEASE, str(old_chart), "--namespace", NAMESPACE, "--create-namespace")
    operator = None
    try:
        wait_operator_available(plane)
        operator = start_operator(plane, name="operator-previous")
        plane.kubectl("create", "namespace", namespace)
        plane.kubectl("apply", "-n", namespace, "-f", str(QUICKSTART))
        wait_all_ready(plane, namespace)
        assert "owner" not in agent_fields(plane)

        refused = helm(plane, "upgrade", RELEASE, str(charts / "kaos"), "-n", NAMESPACE, check=False)
        assert refused.returncode != 0 and "invalid ownership metadata" in refused.stderr, refused.stderr
        helm(plane, "upgrade", RELEASE, str(charts / "kaos"), "-n", NAMESPACE, "--take-ownership")
        for name in KAOS_CRDS:
            annotations = crd(plane, name)["metadata"]["annotations"]
            assert annotations["helm.sh/resource-policy"] == "keep"
            assert annotations["meta.helm.sh/release-name"] == RELEASE, annotations
        assert "owner" in agent_fields(plane)
        wait_operator_available(plane)
        operator.stop()  # the new operator pod, with the new chart's CRD copy
        operator = start_operator(plane, name="operator-upgraded", charts_dir=charts)
        wait_all_ready(plane, namespace)

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

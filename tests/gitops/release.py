"""A next release of this checkout's charts (what a platform upgrade brings: each chart at its
next patch version, so the upgraded operator rolls every workload release), and the check that
a namespace's workloads run it."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Iterable

import yaml

from kaos.api import CHART_OF
from tests.cluster.controlplane import ControlPlane
from tests.cluster.platform import CHARTS
from tests.gitops.readiness import ReadinessWatch, is_rolled_out

RELEASED_CHARTS = ("kaos", "agent", "modelapi", "mcpserver")


def next_release(folder: Path) -> tuple[Path, dict[str, str]]:
    """A copy of charts/ in ``folder`` with every chart but the library at its next patch
    version; (the charts folder, chart -> new version)."""
    charts = folder / "charts"
    shutil.copytree(CHARTS, charts)
    return charts, {chart: next_patch_version(charts / chart / "Chart.yaml") for chart in RELEASED_CHARTS}


def charts_with_a_new_agent_field(folder: Path) -> tuple[Path, dict[str, str]]:
    """A next release of this checkout's charts whose Agent CRD has one more optional field
    (spec.owner); (the charts, chart -> new version)."""
    charts, versions = next_release(folder)
    path = charts / "kaos" / "files" / "crds" / "agent.yaml"
    agent = yaml.safe_load(path.read_text())
    spec = agent["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["properties"]["owner"] = {"type": "string", "description": "Who answers for this agent."}
    path.write_text(yaml.safe_dump(agent, sort_keys=False))
    return charts, versions


def next_patch_version(chart_yaml: Path) -> str:
    version = yaml.safe_load(chart_yaml.read_text())["version"]
    major, minor, patch = version.split(".")
    bumped = f"{major}.{minor}.{int(patch) + 1}"
    chart_yaml.write_text(chart_yaml.read_text().replace(f"version: {version}\n", f"version: {bumped}\n", 1))
    return bumped


def deployment(plane: ControlPlane, namespace: str, kind: str, name: str) -> dict | None:
    return plane.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/{ReadinessWatch.deployment_of(kind, name)}")


def rolled_to(plane: ControlPlane, namespace: str, resources: Iterable[tuple[str, str]], versions: dict[str, str]) -> bool:
    """Each (kind, name)'s Deployment runs its chart's version in ``versions`` and has rolled out."""
    for kind, name in resources:
        found = deployment(plane, namespace, kind, name)
        if found is None:
            return False
        labels = found["spec"]["template"]["metadata"]["labels"]
        if labels.get("helm.sh/chart") != f"{CHART_OF[kind]}-{versions[CHART_OF[kind]]}" or not is_rolled_out(found):
            return False
    return True

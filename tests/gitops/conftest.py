"""Fixtures of the GitOps tests: a control plane of their own (the platform chart is installed,
upgraded and uninstalled here, CRDs included, which the shared tests/cluster plane's release
owns), the local OCI registry and the charts published to it by scripts/package-charts."""

from __future__ import annotations

import subprocess

import pytest
import yaml

from tests.cluster import controlplane
from tests.cluster.controlplane import STOP_TIMEOUT
from tests.gitops.registry import Registry
from tests.gitops.tools import ROOT


@pytest.fixture(scope="session")
def gitops_cluster(tmp_path_factory):
    plane = controlplane.start(tmp_path_factory.mktemp("gitops-cluster"), nodes=1)
    yield plane
    plane.stop()
    left = plane.wait_gone(STOP_TIMEOUT)
    assert left == [], f"processes left running after the control plane stopped: {left}"


@pytest.fixture(scope="session")
def registry(tmp_path_factory):
    with Registry(tmp_path_factory.mktemp("registry")) as started:
        yield started


@pytest.fixture(scope="session")
def published(registry, tmp_path_factory) -> dict[str, str]:
    """The four charts in the registry (oci://<registry>/charts/<chart>), each at its Chart.yaml version: chart -> version."""
    versions = {chart: yaml.safe_load((ROOT / "charts" / chart / "Chart.yaml").read_text())["version"]
                for chart in ("kaos", "agent", "modelapi", "mcpserver")}
    result = subprocess.run([str(ROOT / "scripts" / "package-charts"), "--out", str(tmp_path_factory.mktemp("dist")),
                             "--push", registry.charts, "--plain-http"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count(registry.charts) == 4, result.stdout
    return versions

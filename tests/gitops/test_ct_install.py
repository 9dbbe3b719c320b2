"""chart-testing's real `ct install` on the GitOps tests' control plane: each chart installed with
every values file in its ci/ folder (a namespace of its own each time), `helm install --wait`
until its Deployments are Available (kwok's nodes run the pods' status), `helm test`, then
uninstalled with its namespace."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.charts.rendering import ci_values_files
from tests.cluster.controlplane import ControlPlane
from tests.cluster.platform import HELM4, NAMESPACE
from tests.gitops.platform import remove_platform
from tests.gitops.tools import ROOT, tool

pytestmark = pytest.mark.cluster

# A values file that fails waits out helm's timeout: short, since kwok's pods are Ready in seconds.
WAIT = "--helm-extra-args=--timeout=120s"
# The namespaces the platform chart's ci/ values name: its watched namespaces and its gateway's.
PLATFORM_NAMESPACES = ("team-a", "team-b", NAMESPACE)


def ct_install(plane: ControlPlane, chart: str, *args: str) -> subprocess.CompletedProcess:
    path = os.pathsep.join([str(HELM4.parent), str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    helm_home = plane.folder / "ct-helm"
    env = {**os.environ, "PATH": path, "KUBECONFIG": str(plane.admin_kubeconfig),
           "HELM_CACHE_HOME": str(helm_home / "cache"), "HELM_CONFIG_HOME": str(helm_home / "config"),
           "HELM_DATA_HOME": str(helm_home / "data")}
    return subprocess.run([str(tool("ct")), "install", "--config", "ct.yaml", "--charts", f"charts/{chart}", WAIT, *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)


def assert_installed(result: subprocess.CompletedProcess, chart: str) -> None:
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert f" ✔︎ {chart} => " in result.stdout, result.stdout[-2000:]
    installed = [line for line in result.stdout.splitlines() if line.startswith("Installing chart with values file")]
    assert len(installed) == len(ci_values_files(chart)), installed


@pytest.fixture(scope="module")
def gateway_api(gitops_cluster):
    gitops_cluster.install_gateway_api()  # the ci/ values with gateway.enabled render HTTPRoutes and a Gateway


@pytest.mark.parametrize("chart", ["agent", "modelapi", "mcpserver"])
def test_ct_install_of_a_workload_chart_with_each_ci_values_file(gitops_cluster, gateway_api, chart):
    assert_installed(ct_install(gitops_cluster, chart), chart)


def test_ct_install_of_the_platform_chart_with_each_ci_values_file(gitops_cluster, gateway_api):
    """One installation after another, each with the CRDs: crds.keep=false, so that uninstalling
    one takes its CRDs along and the next can own them."""
    plane = gitops_cluster
    remove_platform(plane)
    for namespace in PLATFORM_NAMESPACES:
        if plane.get(f"/api/v1/namespaces/{namespace}") is None:
            plane.kubectl("create", "namespace", namespace)
    try:
        assert_installed(ct_install(plane, "kaos", "--helm-extra-set-args=--set=crds.keep=false"), "kaos")
    finally:
        remove_platform(plane)

"""chart-testing's real `ct install` on the GitOps tests' control plane: each chart installed with
every values file in its ci/ folder (a namespace of its own each time), `helm install --wait`
until its Deployments are Available (kwok's nodes run the pods' status), `helm test`, then
uninstalled with its namespace. The four charts install side by side."""

from __future__ import annotations

import os
import signal
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
WORKLOAD_CHARTS = ("agent", "modelapi", "mcpserver")


def start_ct_install(plane: ControlPlane, chart: str, log: Path, *args: str) -> subprocess.Popen:
    """``ct install`` of one chart, its output to ``log`` (a pipe would fill while another runs)."""
    path = os.pathsep.join([str(HELM4.parent), str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    helm_home = plane.folder / f"ct-helm-{chart}"
    env = {**os.environ, "PATH": path, "KUBECONFIG": str(plane.admin_kubeconfig),
           "HELM_CACHE_HOME": str(helm_home / "cache"), "HELM_CONFIG_HOME": str(helm_home / "config"),
           "HELM_DATA_HOME": str(helm_home / "data")}
    with open(log, "wb") as out:
        return subprocess.Popen([str(tool("ct")), "install", "--config", "ct.yaml", "--charts", f"charts/{chart}", WAIT,
                                 *args], cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)


@pytest.fixture(scope="module")
def installs(gitops_cluster, tmp_path_factory):
    """The four ct installs at once (each waits on helm and on namespace deletion, most of its time):
    chart -> (process, log). The platform chart's with crds.enabled=false and the CRDs applied
    first, as a cluster with several platform releases has them: one values file's release cannot
    own them, and a CRD still Terminating after one uninstall cannot fail the next install (helm's
    uninstall gives up on a Terminating CRD at once). The namespaces its ci/ values name exist
    first, as a platform team creates them."""
    plane = gitops_cluster
    plane.install_gateway_api()  # the ci/ values with gateway.enabled render HTTPRoutes and a Gateway
    remove_platform(plane)
    for namespace in PLATFORM_NAMESPACES:
        if plane.get(f"/api/v1/namespaces/{namespace}") is None:
            plane.kubectl("create", "namespace", namespace)
    plane.kubectl("apply", "--server-side", "-f", str(ROOT / "charts" / "kaos" / "files" / "crds"))
    logs = tmp_path_factory.mktemp("ct-install")
    started = {chart: (start_ct_install(plane, chart, logs / f"{chart}.log"), logs / f"{chart}.log")
               for chart in WORKLOAD_CHARTS}
    started["kaos"] = (start_ct_install(plane, "kaos", logs / "kaos.log", "--helm-extra-set-args=--set=crds.enabled=false"),
                       logs / "kaos.log")
    try:
        yield started
    finally:
        for process, _ in started.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)  # ct and the helm or kubectl it runs
            process.wait(30)
        remove_platform(plane)


@pytest.mark.parametrize("chart", ["agent", "modelapi", "mcpserver", "kaos"])
def test_ct_install_of_each_chart_with_each_ci_values_file(installs, chart):
    process, log = installs[chart]
    returncode = process.wait(1800)
    output = log.read_text(errors="replace")
    assert returncode == 0, output[-6000:]
    assert f" ✔︎ {chart} => " in output, output[-2000:]
    installed = [line for line in output.splitlines() if line.startswith("Installing chart with values file")]
    assert len(installed) == len(ci_values_files(chart)), installed

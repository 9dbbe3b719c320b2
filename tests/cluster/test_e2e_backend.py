"""The e2e suite's cluster backend (KAOS_E2E_BACKEND=cluster) against this control plane:
everything that needs no running container (resource status, releases, dependencies)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from tests.cluster.controlplane import ROOT, kubectl_executable


def test_e2e_suite_runs_on_the_cluster_backend(cluster, operator):
    env = {**os.environ, "KAOS_E2E_BACKEND": "cluster", "KAOS_E2E_DATAPLANE": "0",
           "KUBECONFIG": str(cluster.admin_kubeconfig),
           "PATH": f"{os.path.dirname(kubectl_executable())}{os.pathsep}{os.environ.get('PATH', '')}"}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "e2e", "-q", "-rfEp", "-p", "no:cacheprovider", "-x", "-W", "ignore"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900,
    )
    summary = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else result.stderr
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    passed = int(re.search(r"(\d+) passed", summary).group(1))
    assert passed >= 5, summary
    # a test of a module with data-plane tests that needs no container itself runs here too
    assert "PASSED e2e/test_upstream_shapes.py::test_upstream_agent_shape_is_upstreams_resource" in result.stdout

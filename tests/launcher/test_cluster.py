"""scripts/cluster's commands (tests/support/launcher/cluster.py) where they start nothing: through
the script, on a state folder of the test's own. The real cluster itself is scripts/test-cluster's."""

import os
import socket
import subprocess
from pathlib import Path

import pytest

from kaos.local.ports import free_port
from tests.support.launcher.cluster import mounts_under
from tests.support.launcher.node import cgroup_problem

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "cluster"


def cluster(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, timeout=60, env={**os.environ, **env})


def test_the_script_is_a_thin_wrapper_of_the_launcher():
    lines = SCRIPT.read_text().splitlines()
    assert len(lines) < 40
    assert lines[-1] == 'exec "$root/.venv/bin/python" -m tests.support.launcher cluster "$@"'


def test_a_wrong_command_gets_the_usage(tmp_path):
    for args in ((), ("start",)):
        wrong = cluster(*args, KAOS_CLUSTER_STATE=str(tmp_path))
        assert wrong.returncode == 2
        assert wrong.stderr == "usage: scripts/cluster up|down|status|restart containerd|kube-router\n"


def test_without_a_cluster_status_says_so_and_restart_refuses(tmp_path):
    status = cluster("status", KAOS_CLUSTER_STATE=str(tmp_path))
    assert (status.returncode, status.stdout) == (1, "not running\n")
    restart = cluster("restart", "containerd", KAOS_CLUSTER_STATE=str(tmp_path))
    assert (restart.returncode, restart.stderr) == (1, "cluster: no cluster runs\n")


def test_the_mounts_under_the_state_deepest_first():
    mounts = ("overlay /var/tmp/kaos-cluster/containerd/state/a/rootfs overlay rw 0 0\n"
              "tmpfs /var/tmp/kaos-cluster/kubelet/pods/x/volumes tmpfs rw 0 0\n"
              "tmpfs /var/tmp/kaos-cluster-other tmpfs rw 0 0\n"
              "proc /proc proc rw 0 0\n")
    assert mounts_under(mounts, Path("/var/tmp/kaos-cluster")) == [
        "/var/tmp/kaos-cluster/kubelet/pods/x/volumes", "/var/tmp/kaos-cluster/containerd/state/a/rootfs"]


def test_while_a_holder_runs_status_prints_the_lines_and_up_refuses(tmp_path, holder):
    status = cluster("status", KAOS_CLUSTER_STATE=str(tmp_path), KAOS_CLUSTER_GATEWAY_PORT="18181")
    assert status.returncode == 0
    assert status.stdout.splitlines() == [f"running (state in {tmp_path})", f"KUBECONFIG={tmp_path}/kubeconfig",
                                          "GATEWAY_URL=http://127.0.0.1:18181"]
    up = cluster("up", KAOS_CLUSTER_STATE=str(tmp_path))
    assert up.returncode == 1 and "already runs" in up.stderr and not up.stdout


@pytest.mark.skipif(os.geteuid() != 0 or cgroup_problem() is not None, reason="needs root and cgroup v1")
def test_up_refuses_a_taken_port_before_it_starts_anything(tmp_path):
    state = tmp_path / "state"
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        up = cluster("up", KAOS_CLUSTER_STATE=str(state), KAOS_CLUSTER_BIN=str(tmp_path / "bin"),
                     KAOS_CLUSTER_API_PORT=str(port), KAOS_CLUSTER_REGISTRY_PORT=str(free_port()),
                     KAOS_CLUSTER_GATEWAY_PORT=str(free_port()))
    assert up.returncode == 1
    assert up.stderr == f"cluster: port {port} on 127.0.0.1 is taken (set KAOS_CLUSTER_*_PORT)\n"
    assert not state.exists()

"""The control plane's command lines (tests/support/launcher/components.py), written once for
tests/cluster (kwok) and scripts/cluster (kubelet), and the files scripts/cluster keeps them in (STATE/commands)."""

import subprocess
import sys
from pathlib import Path

from tests.support.launcher.components import Plane, command_lines
from tests.support.launcher.layout import real_node_plane

ROOT = Path(__file__).resolve().parents[2]


def kwok_plane(tmp_path: Path) -> Plane:
    return Plane(node="kwok", bin=tmp_path / "bin", pki=tmp_path / "pki", etcd_data=tmp_path / "etcd",
                 etcd_port=1, etcd_peer_port=2, api_port=3, bind_address="127.0.0.1", advertise_address="127.0.0.1",
                 controller_kubeconfig=tmp_path / "admin", scheduler_kubeconfig=tmp_path / "admin",
                 apiserver_extra=("--token-auth-file=t.csv",))


def test_both_strategies_share_the_apiserver_flags(tmp_path):
    kwok = command_lines(kwok_plane(tmp_path))["kube-apiserver"]
    kubelet = command_lines(real_node_plane(tmp_path, tmp_path / "bin", "10.244.0.1"))["kube-apiserver"]
    shared = {"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
              "--service-cluster-ip-range=10.96.0.0/16", "--allow-privileged=true", "--profiling=false"}
    assert shared <= set(kwok) and shared <= set(kubelet)
    assert "--authorization-mode=Node,RBAC" in kubelet and "--enable-admission-plugins=NodeRestriction" in kubelet
    assert f"--kubelet-client-certificate={tmp_path / 'pki' / 'apiserver-kubelet-client.crt'}" in kubelet
    assert "--authorization-mode=RBAC" in kwok and "--endpoint-reconciler-type=none" in kwok
    assert kwok[-1] == "--token-auth-file=t.csv"
    assert not any(flag.startswith("--kubelet-client") for flag in kwok)


def test_the_kubelet_strategy_gives_controllers_their_own_credentials(tmp_path):
    lines = command_lines(real_node_plane(tmp_path, tmp_path / "bin", "10.244.0.1"))
    assert "--use-service-account-credentials=true" in lines["kube-controller-manager"]
    assert f"--kubeconfig={tmp_path / 'scheduler.kubeconfig'}" in lines["kube-scheduler"]
    assert "--secure-port=0" not in lines["kube-scheduler"]
    assert "--secure-port=0" in command_lines(kwok_plane(tmp_path))["kube-scheduler"]


def test_the_files_read_back_as_the_arguments_the_command_wrote(tmp_path):
    subprocess.run([sys.executable, "-m", "tests.support.launcher", "control-plane", str(tmp_path),
                    "--bin", "/opt/a b", "--advertise", "10.244.0.1"], cwd=ROOT, check=True, timeout=60)
    read = subprocess.run(["bash", "-c", "mapfile -d '' argv < \"$1\"; printf '%s\\n' \"${argv[@]}\"", "-",
                           str(tmp_path / "commands" / "kube-apiserver")], capture_output=True, text=True, check=True)
    expected = command_lines(real_node_plane(tmp_path, Path("/opt/a b"), "10.244.0.1"))["kube-apiserver"]
    assert read.stdout.splitlines() == expected
    assert expected[0] == "/opt/a b/kube-apiserver"


def test_the_flags_are_written_nowhere_else():
    launcher = [m for m in (ROOT / "tests" / "support" / "launcher").glob("*.py") if m.name != "components.py"]
    assert any(m.name == "cluster.py" for m in launcher)
    for script in (ROOT / "scripts" / "cluster", ROOT / "tests" / "cluster" / "controlplane.py", *launcher):
        text = script.read_text()
        assert "--service-account-issuer" not in text and "--etcd-servers" not in text, script

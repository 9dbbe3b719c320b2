"""What scripts/cluster's node needs of the host and leaves on it (tests/support/launcher/node.py):
it refuses a host without cgroup v1, saying so, and down removes only the host paths up saw absent."""

import subprocess
import sys
from pathlib import Path

from tests.support.launcher.node import HOST_PATHS, cgroup_problem, record_absent, remove_recorded

ROOT = Path(__file__).resolve().parents[2]


def check_host(cgroup_root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tests.support.launcher", "check-host", "--cgroup-root",
                           str(cgroup_root)], cwd=ROOT, capture_output=True, text=True, timeout=60)


def test_a_unified_v2_host_is_refused_saying_so(tmp_path):
    (tmp_path / "cgroup.controllers").write_text("cpu memory\n")
    refused = check_host(tmp_path)
    assert refused.returncode == 1
    assert "needs cgroup v1" in refused.stderr and "Traceback" not in refused.stderr


def test_v1_hierarchies_fit(tmp_path):
    for hierarchy in ("memory", "cpu,cpuacct"):
        (tmp_path / hierarchy).mkdir()
        (tmp_path / hierarchy / "cgroup.procs").write_text("")
    assert cgroup_problem(tmp_path) is None
    assert check_host(tmp_path).returncode == 0


def test_no_hierarchy_at_all_is_refused(tmp_path):
    assert "no cgroup v1 hierarchy" in cgroup_problem(tmp_path)


def test_down_removes_only_the_host_paths_up_saw_absent(tmp_path):
    host, state = tmp_path / "host", tmp_path / "state"
    state.mkdir()
    theirs = host / "run" / "containerd"  # another containerd's, there before up
    (theirs / "io.containerd.runtime.v2.task").mkdir(parents=True)
    (theirs / "io.containerd.runtime.v2.task" / "their-task").write_text("")
    absent = record_absent(state, host)
    assert "/run/containerd" not in absent and "/run/containerd/io.containerd.runtime.v2.task" not in absent
    for path in HOST_PATHS:  # what the node makes while it runs
        (host / path.lstrip("/")).mkdir(parents=True, exist_ok=True)
    (host / "var" / "log" / "pods" / "a-pod").mkdir()
    removed = remove_recorded(state, host)
    assert set(removed) == set(absent)
    assert (theirs / "io.containerd.runtime.v2.task" / "their-task").exists()
    assert not (host / "var" / "log" / "pods").exists() and not (host / "run" / "containerd" / "s").exists()


def test_down_without_a_record_removes_nothing(tmp_path):
    (tmp_path / "var" / "log" / "pods").mkdir(parents=True)
    assert remove_recorded(tmp_path / "state", tmp_path) == []
    assert (tmp_path / "var" / "log" / "pods").exists()


def test_the_launcher_removes_no_host_path_but_those_node_py_recorded():
    launcher = [m for m in (ROOT / "tests" / "support" / "launcher").glob("*.py") if m.name != "node.py"]
    assert any(m.name == "cluster.py" for m in launcher)
    for script in (ROOT / "scripts" / "cluster", *launcher):
        text = script.read_text()
        assert not any(f"rm -rf {path}" in text or f" {path} " in text or f'"{path}"' in text for path in HOST_PATHS)

"""The real node's cgroups (tests/support/launcher/cgroups.py): made in every v1 hierarchy, joined
by the node's daemons, emptied and removed by down. On a folder of the test's own, and once on the
host's cgroup v1 hierarchies themselves (root only)."""

import os
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest

from tests.support.launcher import cgroups
from tests.support.launcher.node import cgroup_problem

ROOT = Path(__file__).resolve().parents[2]


def fake_root(tmp_path: Path) -> Path:
    """Two v1 hierarchies (one a cpuset), a link naming one again, and a plain folder."""
    for hierarchy in ("memory", "cpuset"):
        (tmp_path / hierarchy).mkdir()
        (tmp_path / hierarchy / "cgroup.procs").write_text("")
    (tmp_path / "cpuset" / "cpuset.cpus").write_text("0-1\n")
    (tmp_path / "cpuset" / "cpuset.mems").write_text("0\n")
    (tmp_path / "memory,alias").symlink_to(tmp_path / "memory")
    (tmp_path / "not-a-hierarchy").mkdir()
    return tmp_path


def test_the_hierarchies_are_the_mounted_folders_once_each(tmp_path):
    root = fake_root(tmp_path)
    assert [h.name for h in cgroups.hierarchies(root)] == ["cpuset", "memory"]


def test_make_gives_each_hierarchy_the_groups_and_a_cpuset_its_parents_cpus(tmp_path):
    root = fake_root(tmp_path)
    assert not cgroups.left("kaos-cluster", root)
    cgroups.make("kaos-cluster", root)
    for hierarchy in ("cpuset", "memory"):
        for group in ("", "system", "pods"):
            assert (root / hierarchy / "kaos-cluster" / group).is_dir()
    assert (root / "cpuset" / "kaos-cluster" / "pods" / "cpuset.cpus").read_text() == "0-1\n"
    assert not (root / "memory" / "kaos-cluster" / "cpuset.cpus").exists()
    assert cgroups.left("kaos-cluster", root)


def test_members_are_read_at_every_depth(tmp_path):
    root = fake_root(tmp_path)
    cgroups.make("kaos-cluster", root)
    (root / "memory" / "kaos-cluster" / "system" / "cgroup.procs").write_text("11\n12\n")
    (root / "cpuset" / "kaos-cluster" / "pods" / "pod-a").mkdir()
    (root / "cpuset" / "kaos-cluster" / "pods" / "pod-a" / "cgroup.procs").write_text("12\n40\n")
    assert cgroups.members("kaos-cluster", root) == {11, 12, 40}
    assert cgroups.members("another", root) == set()


def test_a_join_without_a_pid_is_refused_saying_so(tmp_path):
    result = subprocess.run([sys.executable, "-m", "tests.support.launcher", "cgroups", "join", "kaos-cluster",
                             "--cgroup-root", str(fake_root(tmp_path))],
                            cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "needs a PID" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.skipif(os.geteuid() != 0 or cgroup_problem() is not None, reason="needs root and cgroup v1")
def test_on_the_hosts_hierarchies_down_kills_what_joined_and_removes_the_groups():
    name = f"kaos-test-{uuid.uuid4().hex[:8]}"
    cgroups.make(name)
    try:
        sleeper = subprocess.Popen(["sleep", "600"])
        threading.Thread(target=sleeper.wait, daemon=True).start()  # reaps it once killed
        cgroups.join(name, sleeper.pid)
        assert cgroups.members(name) == {sleeper.pid}
        assert cgroups.kill_all(name) == set()
        assert sleeper.wait(timeout=10) == -9
    finally:
        cgroups.kill_all(name)
        cgroups.remove(name)
    assert not cgroups.left(name)

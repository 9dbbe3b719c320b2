"""The real node's cgroups (the kubelet strategy): a folder named after the cluster in each cgroup v1
hierarchy, with ``system/`` (its daemons: scripts/cluster joins each before it starts) and
``pods/`` (the containers: cluster/kubelet.yaml's cgroupRoot). ``down`` kills what they hold and
removes them, so it finds every process the cluster started, however it was reparented.

Each function takes the cgroup root, so the tests run them on a folder of their own."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
SUBGROUPS = ("system", "pods")


def hierarchies(root: Path = ROOT) -> list[Path]:
    """The mounted v1 hierarchies (a folder with cgroup.procs; the links that name a pair of
    controllers, such as cpu -> cpu,cpuacct, are the same hierarchy again)."""
    return sorted(d for d in root.iterdir() if d.is_dir() and not d.is_symlink() and (d / "cgroup.procs").exists())


def folders(name: str, root: Path = ROOT) -> list[Path]:
    return [hierarchy / name for hierarchy in hierarchies(root)]


def make(name: str, root: Path = ROOT) -> None:
    """The cluster's folder and its subgroups in every hierarchy. A new cpuset holds no CPU and
    no memory node until told, so each takes its parent's."""
    for folder in folders(name, root):
        cpuset = (folder.parent / "cpuset.cpus").exists()
        for group in (folder, *(folder / sub for sub in SUBGROUPS)):
            group.mkdir(exist_ok=True)
            if cpuset:
                for knob in ("cpuset.cpus", "cpuset.mems"):
                    (group / knob).write_text((group.parent / knob).read_text())


def join(name: str, pid: int, root: Path = ROOT) -> None:
    """Moves the process into the cluster's system group of every hierarchy."""
    for folder in folders(name, root):
        (folder / "system" / "cgroup.procs").write_text(f"{pid}\n")


def members(name: str, root: Path = ROOT) -> set[int]:
    """Every process in the cluster's groups, at any depth."""
    found: set[int] = set()
    for folder in folders(name, root):
        for procs in folder.rglob("cgroup.procs"):
            try:
                found.update(int(line) for line in procs.read_text().split())
            except OSError:  # the group went away while it was read
                continue
    return found


def left(name: str, root: Path = ROOT) -> bool:
    return any(folder.is_dir() for folder in folders(name, root))


def kill_all(name: str, root: Path = ROOT, attempts: int = 100, interval: float = 0.1) -> set[int]:
    """SIGKILLs the groups' processes until none is left (a dying daemon's children may join
    after it). Returns those still there after ``attempts`` rounds: empty when all are gone."""
    for _ in range(attempts):
        pids = members(name, root)
        if not pids:
            return set()
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(interval)
    return members(name, root)


def remove(name: str, root: Path = ROOT) -> None:
    """Removes the cluster's (empty) groups, deepest first; a group still in use stays."""
    for folder in folders(name, root):
        if not folder.is_dir():
            continue
        for group in sorted((d for d in folder.rglob("*") if d.is_dir()), key=lambda d: len(d.parts), reverse=True):
            _rmdir(group)
        _rmdir(folder)


def _rmdir(path: Path) -> None:
    try:
        path.rmdir()
    except OSError:
        pass

"""What scripts/cluster's real node (the kubelet strategy) needs of the host, and what it leaves
on it. Pure but for the files they are given.

- cgroups: the node's cgroups are made in each cgroup v1 hierarchy (cgroups.py) and
  cluster/kubelet.yaml is written for v1 (failCgroupV1 false, cgroupfs), so a host with the
  unified v2 hierarchy alone is refused, saying so, before anything starts;
- host paths: containerd and the kubelet write a few folders outside the state folder whatever
  their configuration says. `up` records those that did not exist before it
  (STATE/host-paths); `down` removes only those, never a folder another containerd or kubelet of
  the host made."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.support.launcher.cgroups import hierarchies

# Outside the state folder, whatever their configuration: containerd's shim sockets and task
# folders, the kubelet's device-plugin folder, the pods' and containers' log links, NRI's socket.
HOST_PATHS = ("/run/containerd", "/run/containerd/s", "/run/containerd/io.containerd.runtime.v2.task",
              "/run/nri", "/var/lib/kubelet", "/var/lib/kubelet/device-plugins", "/var/log/pods",
              "/var/log/containers")
RECORD = "host-paths"


def cgroup_problem(cgroup_root: Path = Path("/sys/fs/cgroup")) -> str | None:
    """Why the host's cgroups do not fit the node (None when they do): it needs cgroup v1."""
    if (cgroup_root / "cgroup.controllers").exists():
        return (f"{cgroup_root} is the unified cgroup v2 hierarchy; scripts/cluster's node needs cgroup v1 "
                "(its cgroups are made per v1 hierarchy and cluster/kubelet.yaml is written for v1): boot the "
                "host with systemd.unified_cgroup_hierarchy=0, or run the kwok tier (tests/cluster) instead")
    if not hierarchies(cgroup_root):
        return f"no cgroup v1 hierarchy is mounted under {cgroup_root}; scripts/cluster's node needs cgroup v1"
    return None


def _under(root: Path, path: str) -> Path:
    return root / path.lstrip("/")


def record_absent(state: Path, root: Path = Path("/")) -> list[str]:
    """Writes STATE/host-paths: the host paths that do not exist yet (the node will make them)."""
    absent = [path for path in HOST_PATHS if not _under(root, path).exists()]
    (state / RECORD).write_text("".join(f"{path}\n" for path in absent))
    return absent


def remove_recorded(state: Path, root: Path = Path("/")) -> list[str]:
    """Removes the host paths STATE/host-paths names (those `up` saw absent), deepest first."""
    record = state / RECORD
    if not record.exists():
        return []
    recorded = [line for line in record.read_text().splitlines() if line in HOST_PATHS]
    removed = []
    for path in sorted(recorded, key=lambda p: p.count("/"), reverse=True):
        target = _under(root, path)
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target, ignore_errors=True)
            removed.append(path)
        elif target.exists() or target.is_symlink():
            target.unlink()
            removed.append(path)
    return removed

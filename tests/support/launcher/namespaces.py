"""The cluster's namespaces: a holder process (``sleep infinity`` under ``unshare -n -m``) keeps
a network namespace with only lo and the bridge kaos0, whose address is the node's, and a mount
namespace whose mounts go with its last process. Everything of the cluster runs in them
(``inside``: nsenter into both)."""

from __future__ import annotations

import os
from pathlib import Path

from tests.support.launcher.layout import NODE_IP

HOLDER = "holder"  # its pid file's name
HOLDER_COMMAND = ("unshare", "-n", "-m", "--propagation", "private", "--", "sleep", "infinity")


def holder_pid(pid_file: Path) -> int | None:
    """The holder's pid while it runs and holds a network namespace of its own: never the host's,
    whatever the pid file says (a stale file, a reused pid)."""
    try:
        pid = int(pid_file.read_text().strip())
        theirs = os.readlink(f"/proc/{pid}/ns/net")
    except (OSError, ValueError):
        return None
    return pid if theirs != os.readlink("/proc/self/ns/net") else None


def inside(holder: int, *argv: str | Path) -> list[str]:
    """The command line that runs ``argv`` in the holder's network and mount namespaces."""
    return ["nsenter", "-t", str(holder), "-n", "-m", "--", *map(str, argv)]


def network_script(node_ip: str = NODE_IP) -> str:
    """The namespace's network, made once the holder runs: shared mounts (containerd's), lo, and the
    bridge carrying the node's address with the default route, so nothing leaves the machine."""
    return f"""mount --make-rshared /
ip link set lo up
ip link add kaos0 type bridge
ip addr add {node_ip}/24 dev kaos0
ip link set kaos0 up
ip route add default dev kaos0
sysctl -qw net.ipv4.ip_forward=1"""

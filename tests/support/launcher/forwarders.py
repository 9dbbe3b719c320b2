"""The host's way in: 127.0.0.1:<host port> on the host to 127.0.0.1:<port> inside the namespace,
a socat on each side of a Unix socket in STATE/sockets (the one thing both sides see). Pure."""

from __future__ import annotations

from pathlib import Path


def inside_command(socket: Path, port: int) -> list[str]:
    """Inside the namespace: the socket's connections to the port."""
    return ["socat", f"UNIX-LISTEN:{socket},fork,unlink-early", f"TCP:127.0.0.1:{port},nodelay"]


def host_command(host_port: int, socket: Path) -> list[str]:
    """On the host: 127.0.0.1:<host port>'s connections to the socket."""
    return ["socat", f"TCP-LISTEN:{host_port},bind=127.0.0.1,fork,reuseaddr,nodelay", f"UNIX-CONNECT:{socket}"]

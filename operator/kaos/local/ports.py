"""Loopback ports: a free one for each workload, and a clear error for one that is taken."""

from __future__ import annotations

import socket

LOOPBACK = "127.0.0.1"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return sock.getsockname()[1]


class PortInUse(OSError):
    pass


def check_port_free(port: int) -> None:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: TIME_WAIT is free
        try:
            sock.bind((LOOPBACK, port))
        except OSError:
            raise PortInUse(f"port {port} on {LOOPBACK} is in use; choose another with --port") from None

"""`kaos down` / SIGTERM stop the control plane promptly even while a client holds a request
open through the gateway (issue 12): open requests get a bounded grace period, then are cut."""

import os
import signal
import socket
import tempfile
import time
from pathlib import Path

import pytest

from kaos.cli.client import spawn_control_plane
from kaos.local.ports import free_port
from kaos.local.server import SHUTDOWN_GRACE
from kaos.local.state import read_state
from tests.support.polling import wait_until

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("path", [b"/default/agent/missing/v1/chat/completions", b"/_kaos/apply"])
def test_sigterm_with_a_request_held_open(path):
    home = Path(tempfile.mkdtemp(prefix="kaos-shutdown-"))
    tools = ROOT / ".tools" / "bin"
    extra_env = {"PATH": f"{tools}{os.pathsep}{os.environ.get('PATH', '')}"} if tools.is_dir() else {}
    state = spawn_control_plane(home, free_port(), timeout=60, extra_env=extra_env)
    held = socket.create_connection(("127.0.0.1", state.port))
    try:
        # A request whose body never finishes: the server cannot answer it, only cut it.
        held.sendall(b"POST " + path + b" HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
                     b"authorization: Bearer " + state.token.encode() + b"\r\n"
                     b"content-length: 1000\r\n\r\n{\"partial\":")
        started = time.monotonic()
        os.kill(state.pid, signal.SIGTERM)
        wait_until(lambda: read_state(home) is None, SHUTDOWN_GRACE + 15, what="the control plane to stop")
        assert time.monotonic() - started < SHUTDOWN_GRACE + 10
    finally:
        held.close()
        if read_state(home) is not None:
            os.kill(state.pid, signal.SIGKILL)

"""The host's way in (tests/support/launcher/forwarders.py): the two socats, here both on the host,
carry a connection from the host's port through the Unix socket to the port behind it."""

import shutil
import socket
import subprocess
import threading

import pytest

from kaos.local.ports import free_port
from tests.support.launcher.forwarders import host_command, inside_command
from tests.support.polling import wait_until
from tests.support.processes import stop_process

pytestmark = pytest.mark.skipif(not shutil.which("socat"), reason="needs socat")


def echo_once(server: socket.socket) -> None:
    connection, _ = server.accept()
    with connection:
        connection.sendall(connection.recv(1024).upper())


def answer(port: int) -> bytes | None:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as client:
            client.sendall(b"ping")
            return client.recv(1024) or None
    except OSError:
        return None


def test_a_connection_to_the_host_port_reaches_the_port_behind_the_socket(tmp_path):
    behind, host_port, sock = free_port(), free_port(), tmp_path / "api.sock"
    assert str(sock) in host_command(host_port, sock)[2] and str(sock) in inside_command(sock, behind)[1]
    assert "bind=127.0.0.1" in host_command(host_port, sock)[1]
    with socket.create_server(("127.0.0.1", behind)) as server:
        threading.Thread(target=echo_once, args=(server,), daemon=True).start()
        sides = [subprocess.Popen(inside_command(sock, behind)), subprocess.Popen(host_command(host_port, sock))]
        try:
            assert wait_until(lambda: sock.exists() and answer(host_port), timeout=10, what="the answer") == b"PING"
        finally:
            for side in sides:
                stop_process(side, grace=5)

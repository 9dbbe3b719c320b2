"""A stand-in for the cluster's holder: a process in a network namespace of its own (root only)."""

import os
import shutil
import signal
import subprocess

import pytest

from tests.support.launcher.namespaces import holder_pid
from tests.support.polling import wait_until


@pytest.fixture
def holder(tmp_path) -> int:
    """Its pid, written to tmp_path/pids/holder as up writes the holder's."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs root (unshare -n)")
    process = subprocess.Popen(["unshare", "-n", "--", "sleep", "600"])
    pid_file = tmp_path / "pids" / "holder"
    pid_file.parent.mkdir()
    pid_file.write_text(f"{process.pid}\n")
    try:
        wait_until(lambda: holder_pid(pid_file), timeout=10, what="the holder's namespace")
        yield process.pid
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)

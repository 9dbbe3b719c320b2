"""The cluster's processes (tests/support/launcher/daemons.py, namespaces.py): a daemon starts
detached, in the cluster's cgroup before it runs anything, its pid and output where down and
the logs look; the holder is only ever a process of another network namespace."""

import os
import signal
import subprocess
from pathlib import Path

from tests.support.launcher import daemons
from tests.support.launcher.namespaces import holder_pid, inside
from tests.support.polling import wait_until


def fake_cgroups(root: Path) -> Path:
    for hierarchy in ("memory", "pids"):
        (root / hierarchy / "kaos-cluster" / "system").mkdir(parents=True)
        (root / hierarchy / "cgroup.procs").write_text("")
        (root / hierarchy / "kaos-cluster" / "system" / "cgroup.procs").write_text("")
    return root


def test_a_daemon_joins_the_cgroup_runs_in_its_own_session_and_logs(tmp_path):
    root = fake_cgroups(tmp_path / "cgroup")
    pid_file, log_file = tmp_path / "sleeper.pid", tmp_path / "sleeper.log"
    log_file.write_text("before\n")
    pid = daemons.start(["sh", "-c", 'echo "pid $$"; read line || echo "no input"; exec sleep 600'], pid_file,
                        log_file, "kaos-cluster", root)
    try:
        assert pid_file.read_text() == f"{pid}\n"
        for hierarchy in ("memory", "pids"):
            assert (root / hierarchy / "kaos-cluster" / "system" / "cgroup.procs").read_text() == f"{pid}\n"
        assert os.getsid(pid) == pid
        wait_until(lambda: "no input" in log_file.read_text(), timeout=10, what="the daemon's output")
        assert log_file.read_text() == f"before\npid {pid}\nno input\n"
        assert not daemons.stopped(pid)
    finally:
        daemons.terminate(pid)
    wait_until(lambda: daemons.stopped(pid), timeout=10, what="the daemon to stop")


def test_the_recorded_pids_leave_out_what_is_not_one(tmp_path):
    (tmp_path / "kubelet").write_text("12\n")
    (tmp_path / "broken").write_text("")
    assert daemons.recorded(tmp_path) == {"kubelet": 12}
    assert daemons.recorded(tmp_path / "none") == {}


def test_no_holder_without_a_live_process_of_another_network_namespace(tmp_path):
    pid_file = tmp_path / "holder"
    assert holder_pid(pid_file) is None
    pid_file.write_text("not a pid\n")
    assert holder_pid(pid_file) is None
    pid_file.write_text(f"{os.getpid()}\n")  # alive, but in this (the host's) namespace
    assert holder_pid(pid_file) is None


def test_a_process_in_a_namespace_of_its_own_is_the_holder_and_commands_run_inside(tmp_path, holder):
    pid_file = tmp_path / "pids" / "holder"
    assert holder_pid(pid_file) == holder
    links = subprocess.run(inside(holder, "ip", "-o", "link"), capture_output=True, text=True, check=True)
    assert [line.split(":")[1].strip() for line in links.stdout.splitlines()] == ["lo"]
    os.kill(holder, signal.SIGKILL)
    wait_until(lambda: holder_pid(pid_file) is None, timeout=10, what="the holder gone")

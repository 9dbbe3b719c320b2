"""The teardown check of the cluster fixture can fail: ControlPlane.running() reads /proc, so it
sees a process left behind in a started process's group after that process itself is gone."""

from __future__ import annotations

import os
import signal

from tests.cluster.controlplane import ControlPlane
from tests.support.polling import wait_until


def test_running_sees_what_a_stopped_process_left_behind_and_stop_ends_it(tmp_path):
    plane = ControlPlane(tmp_path, tmp_path, None, "", "", tmp_path / "kubeconfig")
    # The leader exits on SIGTERM; the child it leaves in its process group ignores SIGTERM.
    leader = plane._start("straggler", ["sh", "-c", "(trap '' TERM; echo ready; exec sleep 600) & exec sleep 600"])
    try:
        wait_until(lambda: "ready" in leader.log.read_text(), 10, what="the child ignoring SIGTERM")
        assert plane.running() == [leader.label]

        os.killpg(leader.process.pid, signal.SIGTERM)
        leader.process.wait(10)
        assert plane.running() == [leader.label]  # the leader is gone, its child is not
        assert plane.wait_gone(0.2) == [leader.label]
    finally:
        plane.stop(timeout=2)  # SIGTERM is ignored: SIGKILL after 2 s
    assert plane.running() == []

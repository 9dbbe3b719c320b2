"""At rest the operator costs next to nothing: with nothing changing, no helm process starts, no
resource is written, and each resource's status pass runs once per (jittered) resync period,
woken by nothing else, rather than on every tick (issue 31)."""

from __future__ import annotations

import json
import stat
import time

import pytest

from tests.cluster.platform import HELM4, start_operator, wait_ready
from tests.cluster.test_lifecycle import MODELAPI, agent, apply

TICK = 0.2  # KAOS_RESYNC_SECONDS: the shortest gap between two passes of one resource
RESYNC = 1.0  # KAOS_IDLE_RESYNC_SECONDS: each period drawn from [0.5, 1.5) s
WINDOW = 6.0  # an observation window of several resync periods (30 ticks)
COUNTING_HELM = """#!/bin/sh
echo "$*" >> {log}
exec {helm} "$@"
"""


@pytest.fixture
def resting_operator(cluster, operator, namespace, tmp_path):
    """The session's operator replaced, for this test, by one watching the test's namespace only
    (the others' resources would resume), with short resync settings, debug logs (kopf's line
    per timer call) and a helm that logs each run; restored afterwards."""
    helm_log = tmp_path / "helm-runs.log"
    helm_log.touch()
    counting = tmp_path / "helm"
    counting.write_text(COUNTING_HELM.format(log=helm_log, helm=HELM4))
    counting.chmod(counting.stat().st_mode | stat.S_IXUSR)
    operator.stop()
    resting = start_operator(cluster, name="operator-at-rest", extra_env={
        "KAOS_HELM": str(counting), "KAOS_RESYNC_SECONDS": str(TICK), "KAOS_IDLE_RESYNC_SECONDS": str(RESYNC),
        "KAOS_LOG_LEVEL": "DEBUG", "KAOS_WATCH_NAMESPACES": namespace})
    try:
        yield resting, helm_log
    finally:
        resting.stop()
        operator.restart()


def timer_calls(log_text: str, namespace: str) -> dict[str, int]:
    """kopf's "Timer 'resync' is invoked." lines per resource of the namespace."""
    calls: dict[str, int] = {}
    for line in log_text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        target = entry.get("object") or {}
        if entry.get("message") == "Timer 'resync' is invoked." and target.get("namespace") == namespace:
            calls[target.get("name")] = calls.get(target.get("name"), 0) + 1
    return calls


def test_at_rest_no_helm_runs_no_writes_and_one_pass_per_resync_period(cluster, namespace, resting_operator):
    resting, helm_log = resting_operator
    apply(cluster, namespace, MODELAPI, agent("resting"))
    wait_ready(cluster, "ModelAPI", "llm", namespace)
    wait_ready(cluster, "Agent", "resting", namespace)
    runs = helm_log.read_text().splitlines()
    releases = [run.split()[:2] for run in runs if run.split()[0] not in ("version", "show")]  # client, chart: once
    assert sorted(releases) == [["upgrade", "agent-resting"], ["upgrade", "modelapi-llm"]], "\n".join(runs)

    def versions() -> dict[str, str]:
        found = {}
        for kind in ("agents", "modelapis"):
            for item in cluster.kubectl_json("get", kind, "-n", namespace)["items"]:
                found[item["metadata"]["name"]] = item["metadata"]["resourceVersion"]
        return found

    before, calls_before = versions(), timer_calls(resting.log.read_text(errors="replace"), namespace)
    ends = time.monotonic() + WINDOW
    while time.monotonic() < ends:  # an observation window: anything at rest would show in it
        assert helm_log.read_text().splitlines() == runs, "a helm process ran at rest"
        time.sleep(0.2)
    assert versions() == before, "a resource was written at rest"
    calls = timer_calls(resting.log.read_text(errors="replace"), namespace)
    passes = {name: calls.get(name, 0) - calls_before.get(name, 0) for name in ("llm", "resting")}
    # Each pass waits at least half a resync period: at most WINDOW / (RESYNC / 2) + 1 of them
    # (a pass per tick would make WINDOW / TICK = 30); at least one: the resyncs do run.
    assert all(1 <= count <= WINDOW / (RESYNC / 2) + 1 for count in passes.values()), passes

"""Figures for Triggers in a cluster (prints them; not a test): the CPU of the operator process
with 100 idle Triggers (schedules not due, webhooks not called) and their Agent, on the test
control plane of tests/cluster (real kube-apiserver, kwok nodes, the platform chart installed
with Helm, the operator as a process under the chart's ServiceAccount; scripts/setup-kube).

The operator's CPU (user + system, from /proc) is measured over --idle seconds twice: with only
the Agent and its ModelAPI, then with the 100 Triggers too; the difference is what the Triggers
cost (each has a kopf timer at the resync interval, KAOS_RESYNC_SECONDS, 1 s by default).

Run from the project root: python benchmarks/trigger_operator_bench.py [--idle 30] [--triggers 100]
Target: 100 idle Triggers under 10% of one core.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kaos.api import API_VERSION  # noqa: E402
from tests.cluster import controlplane  # noqa: E402
from tests.cluster.platform import install_platform, start_operator, wait_ready  # noqa: E402
from tests.support.polling import wait_until  # noqa: E402

NAMESPACE = "bench"


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far (its /proc stat, in clock ticks)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def share_of_a_core(pid: int, seconds: float) -> float:
    cpu, wall = cpu_seconds(pid), time.monotonic()
    end = wall + seconds
    wait_until(lambda: time.monotonic() >= end, seconds + 5, interval=0.5, what=f"{seconds:g} s")
    return (cpu_seconds(pid) - cpu) / (time.monotonic() - wall)


def trigger(number: int) -> dict:
    spec = {"agent": "reporter", "message": "Write the report."}
    if number % 2:
        spec["schedule"] = "0 3 1 1 *"
    else:
        spec["webhook"] = {"secretRef": {"name": "hook", "key": "hmac"}}
    return {"apiVersion": API_VERSION, "kind": "Trigger", "metadata": {"name": f"idle-{number}"}, "spec": spec}


def apply(plane, *documents: dict) -> None:
    plane.kubectl("apply", "-n", NAMESPACE, "-f", "-", input="\n---\n".join(json.dumps(d) for d in documents))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--idle", type=float, default=30.0, help="seconds of each measurement")
    parser.add_argument("--triggers", type=int, default=100)
    args = parser.parse_args()
    plane = controlplane.start(Path(tempfile.mkdtemp(prefix="kaos-trigger-bench-")))
    try:
        install_platform(plane)
        operator = start_operator(plane)
        plane.kubectl("create", "namespace", NAMESPACE)
        apply(plane, {"apiVersion": API_VERSION, "kind": "ModelAPI", "metadata": {"name": "llm"},
                      "spec": {"mode": "Proxy", "proxyConfig": {"models": ["m"]}}},
              {"apiVersion": API_VERSION, "kind": "Agent", "metadata": {"name": "reporter"},
               "spec": {"modelAPI": "llm", "model": "m"}},
              {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "hook"}, "stringData": {"hmac": "k"}})
        wait_ready(plane, "Agent", "reporter", NAMESPACE, timeout=120)
        base = share_of_a_core(operator.process.pid, args.idle)
        print(f"operator, one Agent and its ModelAPI: {base * 100:.2f}% of one core over {args.idle:g} s")

        apply(plane, *(trigger(number) for number in range(args.triggers)))
        listed = lambda: plane.kubectl_json("get", "triggers", "-n", NAMESPACE)["items"]  # noqa: E731
        wait_until(lambda: sum((t.get("status") or {}).get("phase") == "Ready" for t in listed()) == args.triggers,
                   300, interval=1, what=f"{args.triggers} Triggers Ready")
        loaded = share_of_a_core(operator.process.pid, args.idle)
        print(f"... and {args.triggers} idle Triggers: {loaded * 100:.2f}% of one core over {args.idle:g} s "
              f"(the Triggers: {(loaded - base) * 100:.2f}%)")
    finally:
        plane.stop()
        left = plane.wait_gone()
        if left:
            print(f"left running: {left}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

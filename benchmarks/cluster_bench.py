"""Figures for the cluster tier (prints them; not a test).

On the real control plane of tests/cluster (etcd, kube-apiserver, controller-manager,
scheduler, kwok, built by scripts/setup-kube), with the platform chart installed and the
operator running under its ServiceAccount:
- cold start: seconds from nothing to the apiserver's /readyz, and to nodes Ready;
- quickstart: seconds from `kubectl apply --server-side` of examples/quickstart/ to all four Ready;
- throughput: seconds from applying 50 Agents at once to all Ready, with the operator's CPU
  seconds (its Python process and the helm processes it runs) and peak RSS (the Python
  process) meanwhile; and the operator's idle RSS before and after.

Targets (issue 8): quickstart within 15 s; 50 agents within 60 s; operator idle RSS < 150 MiB.

    python benchmarks/cluster_bench.py [--agents 50]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "operator")]

from kaos.api import AGENT, API_VERSION, MODELAPI  # noqa: E402
from tests.cluster import controlplane  # noqa: E402
from tests.cluster.platform import install_platform, ready, start_operator, wait_ready  # noqa: E402
from tests.cluster.test_reconcile import EXAMPLES, manifests  # noqa: E402
from tests.support.polling import wait_until  # noqa: E402


def cpu_seconds(pgid: int) -> float:
    """CPU seconds (user + system) of the operator's process group: the operator, the helm processes
    it runs now, and those it has waited for (cutime + cstime). Every process it starts stays in the
    group, which it leads (start_new_session)."""
    return sum(stat.cpu + stat.children_cpu for stat in controlplane.process_stats() if stat.pgrp == pgid)


def memory_mib(pid: int, key: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def agents(count: int) -> str:
    modelapi = {"apiVersion": API_VERSION, "kind": MODELAPI, "metadata": {"name": "llm"},
                "spec": {"mode": "Proxy", "proxyConfig": {"models": ["gpt-4o-mini"]}}}
    items = [modelapi] + [
        {"apiVersion": API_VERSION, "kind": AGENT, "metadata": {"name": f"bench-{i}"},
         "spec": {"modelAPI": "llm", "model": "gpt-4o-mini"}} for i in range(count)]
    return "\n---\n".join(json.dumps(item) for item in items)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=50)
    args = parser.parse_args()

    plane = controlplane.start(nodes=2)
    try:
        print(f"cold start: apiserver /readyz {plane.timings['apiserver']:.2f} s, "
              f"all components and nodes Ready {plane.timings['ready']:.2f} s")
        began = time.monotonic()
        install_platform(plane)
        print(f"helm install kaos charts/kaos to operator Deployment Available: {time.monotonic() - began:.2f} s")
        operator = start_operator(plane)
        pid = operator.process.pid
        wait_until(lambda: memory_mib(pid, "VmRSS") > 0, 5)
        print(f"operator idle RSS at start: {memory_mib(pid, 'VmRSS'):.0f} MiB")

        plane.kubectl("create", "namespace", "quickstart")
        began = time.monotonic()
        plane.kubectl("apply", "--server-side", "-n", "quickstart", "-f", str(EXAMPLES / "quickstart"))
        for item in manifests(EXAMPLES / "quickstart"):
            wait_ready(plane, item["kind"], item["metadata"]["name"], "quickstart", timeout=120)
        print(f"quickstart apply -> all 4 Ready: {time.monotonic() - began:.2f} s (target 15 s)")

        plane.kubectl("create", "namespace", "bench")
        cpu_before = cpu_seconds(pid)
        began = time.monotonic()
        plane.kubectl("apply", "--server-side", "-n", "bench", "-f", "-", input=agents(args.agents))
        names = [f"bench-{i}" for i in range(args.agents)]
        wait_until(lambda: all(ready(plane, "Agent", name, "bench") for name in names), 600, interval=0.5,
                   what=f"{args.agents} agents Ready")
        elapsed = time.monotonic() - began
        print(f"{args.agents} agents apply -> all Ready: {elapsed:.2f} s (target 60 s), "
              f"{args.agents / elapsed:.2f} agents/s, operator CPU {cpu_seconds(pid) - cpu_before:.1f} s "
              f"(with its helm processes), "
              f"operator peak RSS {memory_mib(pid, 'VmHWM'):.0f} MiB")
        idle_cpu = cpu_seconds(pid)
        time.sleep(10)  # a benchmark measuring idle cost, not a test synchronising on something
        print(f"operator idle after: RSS {memory_mib(pid, 'VmRSS'):.0f} MiB (target < 150 MiB), "
              f"CPU {100 * (cpu_seconds(pid) - idle_cpu) / 10:.1f}% (with its helm processes) over 10 s "
              f"with {args.agents + 5} resources")
        operator.stop()
    finally:
        plane.stop()


if __name__ == "__main__":
    main()

"""Figures for `kaos up` (prints them; not a test).

1. Time from `kaos up --detach -f examples/quickstart/` to every resource Ready.
2. The gateway's added latency per request (p50, p99): GET /health on the coordinator through
   the gateway against the same request on the agent's own port, interleaved, keep-alive.

Run from the project root: python benchmarks/local_bench.py [--requests 2000]
Targets on a 2-core machine: all Ready within 20 s; gateway overhead under 1 ms at p50.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kaos.cli.client import Client  # noqa: E402
from kaos.local.ports import free_port  # noqa: E402


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def time_up(env: dict, port: int) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "kaos.cli", "up", "--detach", "--port", str(port), "-f", str(ROOT / "examples/quickstart")],
        env=env, check=True, stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - start


def gateway_overhead(gateway: str, direct: str, requests: int) -> tuple[list[float], list[float]]:
    through, straight = [], []
    with httpx.Client() as http:
        for _ in range(50):  # warm both connections
            http.get(f"{gateway}/health")
            http.get(f"{direct}/health")
        for _ in range(requests):
            for url, samples in ((f"{gateway}/health", through), (f"{direct}/health", straight)):
                start = time.perf_counter()
                response = http.get(url)
                samples.append((time.perf_counter() - start) * 1000)
                assert response.status_code == 200, response.text
    return through, straight


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=2000)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="kaos-bench-"))
    port = free_port()
    env = {**os.environ, "KAOS_HOME": str(home), "PATH": f"{ROOT / '.tools/bin'}{os.pathsep}{os.environ['PATH']}"}
    os.environ["KAOS_HOME"] = str(home)
    try:
        seconds = time_up(env, port)
        print(f"kaos up --detach (quickstart: 1 ModelAPI, 1 MCPServer, 2 Agents) -> all Ready: {seconds:.1f} s (target < 20 s)")
        client = Client.from_home(home)
        coordinator = next(r for r in client.resources("Agent") if r["metadata"]["name"] == "coordinator")
        direct = coordinator["status"]["endpoint"]
        gateway = f"http://127.0.0.1:{port}/default/agent/coordinator"
        through, straight = gateway_overhead(gateway, direct, args.requests)
        for label, fraction in (("p50", 0.5), ("p99", 0.99)):
            g, d = percentile(through, fraction), percentile(straight, fraction)
            print(f"GET /health {label}: direct {d:.3f} ms, via gateway {g:.3f} ms, overhead {g - d:.3f} ms")
        print(f"({args.requests} requests each, interleaved, keep-alive; target overhead < 1 ms at p50)")
        print(f"mean overhead: {statistics.mean(through) - statistics.mean(straight):.3f} ms")
    finally:
        subprocess.run([sys.executable, "-m", "kaos.cli", "down"], env=env, stdout=subprocess.DEVNULL)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Interleaved A/B of the runtime benchmark between two commits: c1 p50 and c16 throughput.

    python benchmarks/runtime_ab.py BASE HEAD [--rounds 3] [--requests 2000]

Checks both commits out as git worktrees (in a temporary folder, removed at the end) and
runs this checkout's benchmarks/runtime_bench.py alternately against the runtime of each
(PYTHONPATH=<worktree>/runtime: the agents run that commit's kaos_runtime; the mock model
server, the load generator and the venv are the same for both), BASE first in odd rounds
and HEAD first in even ones, so that whatever else the machine does hits both alike. Prints
each run's figures and the medians. Not a test: it prints figures.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys

from commits import ROOT, checked_out

BENCH = os.path.join(ROOT, "benchmarks", "runtime_bench.py")


def figures(output: str) -> tuple[float, float]:
    """(agent c1 p50 in ms, agent c16 req/s) from runtime_bench's output."""
    c1 = re.search(r"concurrency 1:\n(?:.*\n)*?\s+agent \(direct client\)\s+p50\s+([\d.]+) ms", output)
    c16 = re.search(r"concurrency \d+:\n(?:.*\n)*?\s+agent \(direct client\)\s+p50.*?([\d.]+) req/s", output)
    if not (c1 and c16):
        raise RuntimeError(f"cannot read the benchmark's figures:\n{output}")
    return float(c1.group(1)), float(c16.group(1))


def run(worktree: str, requests: int) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": os.path.join(worktree, "runtime")}
    done = subprocess.run([sys.executable, BENCH, "--requests", str(requests), "--cold-rounds", "1",
                           "--base", "none"],
                          env=env, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise RuntimeError(f"runtime_bench failed on {worktree}:\n{done.stdout}\n{done.stderr}")
    return figures(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base")
    parser.add_argument("head")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=2000)
    args = parser.parse_args()
    with checked_out([args.base, args.head]) as trees:
        sides = {name: (path, sha, []) for name, (path, sha) in zip("AB", trees)}
        print(f"A = {args.base} ({sides['A'][1]}), B = {args.head} ({sides['B'][1]}); "
              f"{args.rounds} interleaved rounds of runtime_bench --requests {args.requests}, {os.cpu_count()} CPUs")
        for round_ in range(args.rounds):
            for name in ("A", "B") if round_ % 2 == 0 else ("B", "A"):
                path, _, results = sides[name]
                c1, c16 = run(path, args.requests)
                results.append((c1, c16))
                print(f"  round {round_ + 1} {name}: agent c1 p50 {c1:.2f} ms, c16 {c16:.0f} req/s", flush=True)
    medians = {}
    for name, (_, sha, results) in sides.items():
        medians[name] = (statistics.median(r[0] for r in results), statistics.median(r[1] for r in results))
        print(f"{name} ({sha}): median c1 p50 {medians[name][0]:.2f} ms, median c16 {medians[name][1]:.0f} req/s")
    (a1, a16), (b1, b16) = medians["A"], medians["B"]
    print(f"B vs A: c1 p50 {100 * (b1 - a1) / a1:+.1f}%, c16 throughput {100 * (b16 - a16) / a16:+.1f}%")

if __name__ == "__main__":
    main()

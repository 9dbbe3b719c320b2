"""Figures for the real single-node cluster of scripts/cluster (prints them; not a test).

1. `scripts/build-images` with every image cached (the warm build; the first build's figures are
   in docs/cluster.md) and `scripts/cluster up` (parts and images cached) to all Ready.
2. `kubectl apply -f examples/quickstart/` in a fresh namespace to all four resources Ready,
   with real pods.
3. An agent pod's memory (its memory cgroup's working set, as the kubelet counts it) idle and
   after the load below.
4. Chat completions against a scripted agent (DEBUG_MOCK_RESPONSES: no model call) through the
   cluster's Gateway (Traefik) beside the same agent through `kaos up`'s gateway, in
   interleaved rounds: requests per second and p50/p99 at the given concurrency.

Needs root and scripts/setup-test's venv; starts the cluster unless one runs (and then stops
only what it started). Run from the project root:

    python benchmarks/realcluster_bench.py [--requests 1000] [--concurrency 4] [--rounds 3]

Targets: cluster up under 90 s warm; quickstart Ready within 30 s of apply; the Gateway's
figures within 1.5x of the local gateway's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kaos.local.ports import free_port  # noqa: E402

QUICKSTART = ROOT / "examples" / "quickstart"
KINDS = ("modelapi", "mcpserver", "agent")


def run(*argv: str, env: dict | None = None, check: bool = True) -> str:
    return subprocess.run(argv, env=env, check=check, capture_output=True, text=True).stdout


def exports(lines: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in lines.splitlines() if line.startswith(("KUBECONFIG=", "GATEWAY_URL=")))


def kubectl(env: dict, *args: str, stdin: str | None = None) -> str:
    return subprocess.run(["kubectl", *args], env=env, input=stdin, check=True, capture_output=True, text=True).stdout


def phases(env: dict, namespace: str) -> dict[str, str]:
    found = {}
    for kind in KINDS:
        for item in json.loads(kubectl(env, "get", kind, "-n", namespace, "-o", "json"))["items"]:
            found[f"{kind}/{item['metadata']['name']}"] = (item.get("status") or {}).get("phase", "")
    return found


def wait_ready(env: dict, namespace: str, count: int, timeout: float) -> float:
    began = time.perf_counter()
    while time.perf_counter() - began < timeout:
        now = phases(env, namespace)
        if len(now) >= count and all(phase == "Ready" for phase in now.values()):
            return time.perf_counter() - began
        time.sleep(0.2)
    raise SystemExit(f"not all Ready in {namespace} within {timeout:.0f} s: {phases(env, namespace)}")


def wait_serving(url: str, timeout: float) -> None:
    """Until a chat completion at ``url`` answers 200: the Gateway serves a route a moment after
    the agent turns Ready (Traefik hears of its endpoints by its own watch)."""
    began = time.perf_counter()
    body = {"model": "bench", "messages": [{"role": "user", "content": "hi"}]}
    while time.perf_counter() - began < timeout:
        try:
            if httpx.post(url, json=body, timeout=10).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"{url} did not answer 200 within {timeout:.0f} s")


def scripted_agent(replies: int) -> list[dict]:
    """The quickstart's ModelAPI and an agent that answers from DEBUG_MOCK_RESPONSES only."""
    modelapi = yaml.safe_load((QUICKSTART / "01-modelapi.yaml").read_text())
    agent = {"apiVersion": "kaos.tools/v1alpha1", "kind": "Agent", "metadata": {"name": "bench"},
             "spec": {"modelAPI": "llm", "model": "quickstart", "config": {
                 "description": "scripted", "env": [{"name": "DEBUG_MOCK_RESPONSES",
                                                     "value": json.dumps(["ok"] * replies)}]}}}
    return [modelapi, agent]


def pod_memory_mib(env: dict, namespace: str, prefix: str) -> float:
    """The pod's working set from its memory cgroup on this machine (the node): usage minus
    inactive file pages, as the kubelet computes it (cgroup v1)."""
    pods = json.loads(kubectl(env, "get", "pods", "-n", namespace, "-o", "json"))["items"]
    uid = next((p["metadata"]["uid"] for p in pods if p["metadata"]["name"].startswith(prefix)), None)
    if uid is None:
        raise SystemExit(f"no pod {prefix}* in {namespace}")
    names = {f"pod{uid}", f"pod{uid.replace('-', '_')}"}
    for folder, children, _ in os.walk("/sys/fs/cgroup/memory"):
        found = names.intersection(children)
        if found:
            cgroup = Path(folder) / found.pop()
            usage = int((cgroup / "memory.usage_in_bytes").read_text())
            stat = dict(line.split() for line in (cgroup / "memory.stat").read_text().splitlines())
            return (usage - int(stat.get("total_inactive_file", 0))) / 2**20
    raise SystemExit(f"no memory cgroup for pod {uid} under /sys/fs/cgroup/memory")


async def load(url: str, requests: int, concurrency: int) -> tuple[list[float], float]:
    body = {"model": "bench", "messages": [{"role": "user", "content": "hi"}]}
    latencies: list[float] = []
    queue = iter(range(requests))

    async def worker(client: httpx.AsyncClient) -> None:
        for _ in queue:
            began = time.perf_counter()
            try:
                response = await client.post(url, json=body)
            except httpx.HTTPError as error:
                raise SystemExit(f"{url}: {error!r}") from None
            latencies.append((time.perf_counter() - began) * 1000)
            if response.status_code != 200:
                raise SystemExit(f"{url}: {response.status_code} {response.text[:200]}")

    async with httpx.AsyncClient(timeout=30) as client:
        await asyncio.gather(*(worker(client) for _ in range(min(20, requests))))  # warm the connections
        queue = iter(range(requests))
        began = time.perf_counter()
        latencies.clear()
        await asyncio.gather(*(worker(client) for _ in range(concurrency)))
        return latencies, time.perf_counter() - began


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    base = {**os.environ, "PATH": f"{ROOT / '.tools/bin'}{os.pathsep}{ROOT / '.venv/bin'}{os.pathsep}{os.environ['PATH']}"}

    began = time.perf_counter()
    run(str(ROOT / "scripts/build-images"), "runtime", "operator", "litellm", "redis", env=base)
    print(f"scripts/build-images (every image cached): {time.perf_counter() - began:.1f} s "
          "(first builds: docs/cluster.md)")
    status = subprocess.run([str(ROOT / "scripts/cluster"), "status"], env=base, capture_output=True, text=True)
    started = status.returncode != 0
    if started:
        began = time.perf_counter()
        lines = run(str(ROOT / "scripts/cluster"), "up", env=base)
        print(f"scripts/cluster up (parts and images cached) -> all Ready: {time.perf_counter() - began:.1f} s "
              "(target < 90 s)")
    else:
        lines = status.stdout
        print("scripts/cluster up: a cluster already runs (not timed)")
    env = {**base, **exports(lines)}
    gateway = env["GATEWAY_URL"].rstrip("/")
    namespace = f"bench-{uuid.uuid4().hex[:6]}"
    home = Path(tempfile.mkdtemp(prefix="kaos-bench-"))
    port = free_port()
    local = {**base, "KAOS_HOME": str(home)}
    local.pop("OPENAI_API_KEY", None)
    try:
        kubectl(env, "create", "namespace", namespace)
        began = time.perf_counter()
        kubectl(env, "apply", "-n", namespace, "-f", str(QUICKSTART))
        wait_ready(env, namespace, 4, 300)
        print(f"kubectl apply -f examples/quickstart/ -> 4 resources Ready with real pods: "
              f"{time.perf_counter() - began:.1f} s (target < 30 s)")

        replies = 2 * args.rounds * (args.requests + 20) + 100
        documents = yaml.safe_dump_all(scripted_agent(replies))
        kubectl(env, "apply", "-n", namespace, "-f", "-", stdin=documents)
        wait_ready(env, namespace, 5, 300)
        folder = home / "manifests"
        folder.mkdir()
        (folder / "bench.yaml").write_text(documents)
        run(sys.executable, "-m", "kaos.cli", "up", "--detach", "--port", str(port), "-f", str(folder), env=local)

        idle = pod_memory_mib(env, namespace, "agent-bench-")
        urls = {"cluster Gateway (Traefik)": f"{gateway}/{namespace}/agent/bench/v1/chat/completions",
                "kaos up gateway": f"http://127.0.0.1:{port}/default/agent/bench/v1/chat/completions"}
        for url in urls.values():
            wait_serving(url, 60)
        results: dict[str, list[tuple[list[float], float]]] = {label: [] for label in urls}
        for round_ in range(args.rounds):
            order = list(urls) if round_ % 2 == 0 else list(reversed(urls))
            for label in order:
                results[label].append(asyncio.run(load(urls[label], args.requests, args.concurrency)))
        loaded = pod_memory_mib(env, namespace, "agent-bench-")
        print(f"agent pod memory (cgroup working set): idle {idle:.0f} MiB, after "
              f"{args.rounds * args.requests} chat completions {loaded:.0f} MiB")
        print(f"chat completions against a scripted agent, {args.rounds} interleaved rounds of {args.requests} "
              f"at concurrency {args.concurrency} (medians of the rounds):")
        figures = {}
        for label, rounds in results.items():
            rps = statistics.median(len(lat) / wall for lat, wall in rounds)
            p50 = statistics.median(percentile(lat, 0.5) for lat, _ in rounds)
            p99 = statistics.median(percentile(lat, 0.99) for lat, _ in rounds)
            figures[label] = (rps, p50, p99)
            print(f"  {label:<28} {rps:8.0f} req/s   p50 {p50:7.2f} ms   p99 {p99:7.2f} ms")
        (c_rps, c50, c99), (l_rps, l50, l99) = figures.values()
        print(f"  Gateway / local gateway: p50 {c50 / l50:.2f}x, p99 {c99 / l99:.2f}x, req/s {c_rps / l_rps:.2f}x "
              "(target: latency within 1.5x)")
    finally:
        subprocess.run([sys.executable, "-m", "kaos.cli", "down"], env=local, capture_output=True)
        subprocess.run(["kubectl", "delete", "namespace", namespace, "--wait=false"], env=env, capture_output=True)
        if started:
            run(str(ROOT / "scripts/cluster"), "down", env=base, check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())

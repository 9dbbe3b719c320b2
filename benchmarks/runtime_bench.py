"""Benchmark of the agent runtime against the bare mock model server it calls.

    python benchmarks/runtime_bench.py [--requests 2000] [--concurrency 16]

Starts its own processes on 127.0.0.1 (the mock model server from tests/support, agents
with `python -m kaos_runtime agent`), prints figures, and stops them. Not a test: it
asserts nothing; compare the figures with the targets in docs/runtime.md.
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

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import aiohttp  # noqa: E402
import httpx  # noqa: E402

from tests.support.processes import Service, free_port, spawn, wait_until_ok  # noqa: E402

MODEL = "ollama/smollm2:135m"
BODY = {"model": MODEL, "messages": [{"role": "user", "content": "hello"}]}


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


async def run_load(url: str, total: int, concurrency: int, body: dict | None = None,
                   script=None) -> tuple[list[float], float]:
    """POST `body` `total` times with `concurrency` workers; latencies and wall time."""
    latencies: list[float] = []
    remaining = iter(range(total))
    payload = json.dumps(body or BODY).encode()
    headers = {"content-type": "application/json"}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as session:
        async def worker():
            for _ in remaining:
                if script is not None:
                    await script(session)
                start = time.perf_counter()
                async with session.post(url, data=payload, headers=headers) as response:
                    await response.read()
                    if response.status != 200:
                        raise RuntimeError(f"{url} answered {response.status}")
                latencies.append(time.perf_counter() - start)

        began = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return latencies, time.perf_counter() - began


async def first_content_times(url: str, total: int) -> list[float]:
    times = []
    payload = json.dumps({**BODY, "stream": True}).encode()
    async with aiohttp.ClientSession() as session:
        for _ in range(total):
            start = time.perf_counter()
            first = None
            async with session.post(url, data=payload, headers={"content-type": "application/json"}) as response:
                async for line in response.content:
                    if first is None and line.startswith(b"data: {") and b'"content":"' in line \
                            and b'"content":""' not in line:
                        first = time.perf_counter() - start
            times.append(first if first is not None else float("nan"))
    return times


def report(name: str, latencies: list[float], wall: float | None = None) -> None:
    line = f"  {name:<34} p50 {ms(statistics.median(latencies)):>10}  p99 {ms(percentile(latencies, 0.99)):>10}"
    if wall is not None:
        line += f"  {len(latencies) / wall:8.0f} req/s"
    print(line)


def cold_start(env: dict, log_dir: str, rounds: int) -> list[float]:
    times = []
    for index in range(rounds):
        began = time.perf_counter()
        service = spawn(f"cold-{index}", ["-m", "kaos_runtime", "agent"], env, log_dir)
        try:
            deadline = began + 30
            while time.perf_counter() < deadline:
                try:
                    if httpx.get(service.url + "/health", timeout=0.5).status_code == 200:
                        break
                except httpx.HTTPError:
                    time.sleep(0.005)
            times.append(time.perf_counter() - began)
        finally:
            service.stop()
    return times


def start_agent(name: str, env: dict, log_dir: str) -> Service:
    service = spawn(name, ["-m", "kaos_runtime", "agent"], {"AGENT_NAME": name, "MODEL_NAME": MODEL,
                                                            "AGENT_LOG_LEVEL": "WARNING", **env}, log_dir)
    wait_until_ok(service, "/ready")
    return service


async def main(args) -> None:
    log_dir = tempfile.mkdtemp(prefix="kaos-bench-")
    started: list[Service] = []
    os.chdir(ROOT)
    try:
        mock = spawn("mock-model", ["-m", "tests.support.mock_model"], {}, log_dir)
        started.append(mock)
        wait_until_ok(mock)
        model_env = {"MODEL_API_URL": mock.url}
        agent = start_agent("bench", model_env, log_dir)
        started.append(agent)
        idle_rss = rss_mib(agent.process.pid)
        n, c = args.requests, args.concurrency
        chat = "/v1/chat/completions"
        print(f"runtime benchmark: {n} requests per figure, concurrency 1 and {c}, {os.cpu_count()} CPUs")
        await run_load(agent.url + chat, 200, 4)  # imports litellm, warms connections
        await run_load(mock.url + chat, 200, 4)

        print("concurrency 1:")
        report("mock model directly", (await run_load(mock.url + chat, n, 1))[0])
        report("agent (litellm direct)", (await run_load(agent.url + chat, n, 1))[0])
        print(f"concurrency {c}:")
        report("mock model directly", *(await run_load(mock.url + chat, n * 2, c)))
        report("agent (litellm direct)", *(await run_load(agent.url + chat, n * 2, c)))
        loaded_rss = rss_mib(agent.process.pid)

        print("streaming, time to first content (concurrency 1):")
        report("agent", await first_content_times(agent.url + chat, min(n, 500)))

        worker = start_agent("bench-worker", model_env, log_dir)
        started.append(worker)
        coordinator = start_agent("bench-coord", {
            **model_env, "PEER_AGENTS": "bench-worker",
            "PEER_AGENT_BENCH_WORKER_CARD_URL": worker.url + "/.well-known/agent",
        }, log_dir)
        started.append(coordinator)
        delegate = '```delegate\n{"agent": "bench-worker", "task": "say hi"}\n```'
        script = json.dumps({"replies": [delegate, "worker says hi", "done"]}).encode()

        async def queue_replies(session):
            async with session.post(mock.url + "/_mock/script", data=script) as response:
                await response.read()

        hops = min(n, 500)
        await run_load(coordinator.url + chat, 50, 1, script=queue_replies)
        print("one delegation hop (concurrency 1; three model calls, two agents):")
        report("coordinator -> worker", (await run_load(coordinator.url + chat, hops, 1, script=queue_replies))[0])

        if args.acompletion:
            plain = start_agent("bench-acompletion", {**model_env, "MODEL_CLIENT": "acompletion"}, log_dir)
            started.append(plain)
            await run_load(plain.url + chat, 100, 2)
            print("for comparison, MODEL_CLIENT=acompletion (litellm.acompletion per call):")
            report("agent c1", (await run_load(plain.url + chat, min(n, 1000), 1))[0])
            report(f"agent c{c}", *(await run_load(plain.url + chat, min(n, 1000) * 2, c)))

        colds = cold_start({"AGENT_NAME": "cold", "MODEL_API_URL": mock.url, "MODEL_NAME": MODEL,
                            "AGENT_LOG_LEVEL": "WARNING"}, log_dir, args.cold_rounds)
        print(f"cold start (spawn to first 200 on /health, {len(colds)} runs): "
              f"median {statistics.median(colds):.2f} s, max {max(colds):.2f} s")
        print(f"idle RSS after startup: {idle_rss:.0f} MiB; after the load above (litellm imported): "
              f"{loaded_rss:.0f} MiB")
    finally:
        for service in reversed(started):
            service.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--cold-rounds", type=int, default=5)
    parser.add_argument("--acompletion", action="store_true",
                        help="also measure MODEL_CLIENT=acompletion (plain litellm.acompletion)")
    asyncio.run(main(parser.parse_args()))

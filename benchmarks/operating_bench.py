"""What operating features cost per request: a token budget and API-key auth on, against off.

    python benchmarks/operating_bench.py [--requests 2000] [--concurrency 16] [--rounds 3]

Starts the mock model server and two agents on 127.0.0.1: "off" (no budget, no auth) and
"on" (BUDGET_TOKENS_PER_MINUTE/DAY and BUDGET_CALLER_TOKENS_PER_MINUTE set high enough never
to refuse, AUTH_API_KEYS with the key sent on every request). Both serve /metrics: the metrics
middleware and wrappers are always mounted, so they are in both figures (see the
in-process figure at the end for their share). Rounds alternate off/on so that load from
anything else on the machine falls on both alike. Not a test: it prints figures; the target
is under 0.2 ms added at concurrency 1 (p50) and under 10% fewer requests/s at concurrency 16.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "runtime"))

from benchmarks.runtime_bench import MODEL, ms, percentile, split_url, start_agent  # noqa: E402
from tests.support.processes import Service, spawn, wait_until_ok  # noqa: E402

KEY = "bench-key-0123456789abcdef"
BODY = json.dumps({"model": MODEL, "messages": [{"role": "user", "content": "hello"}]}).encode()


class Connection:
    """Keep-alive HTTP/1.1 POSTs with optional extra headers (content-length bodies only)."""

    def __init__(self, base: str, headers: str) -> None:
        host, port = base.split("//", 1)[1].rsplit(":", 1)
        self.host, self.port, self.headers = host, int(port), headers
        self.reader = self.writer = None

    async def post(self, path: str, body: bytes) -> int:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        self.writer.write(f"POST {path} HTTP/1.1\r\nHost: {self.host}\r\ncontent-type: application/json\r\n"
                          f"{self.headers}content-length: {len(body)}\r\n\r\n".encode() + body)
        head = (await self.reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        length = next(int(line.split(":", 1)[1]) for line in head[1:] if line.lower().startswith("content-length:"))
        await self.reader.readexactly(length)
        return int(head[0].split(" ", 2)[1])

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


async def load(url: str, total: int, concurrency: int, key: str | None) -> tuple[list[float], float]:
    base, path = split_url(url)
    headers = f"authorization: Bearer {key}\r\n" if key else ""
    remaining, latencies = iter(range(total)), []

    async def worker():
        connection = Connection(base, headers)
        try:
            for _ in remaining:
                start = time.perf_counter()
                status = await connection.post(path, BODY)
                latencies.append(time.perf_counter() - start)
                if status != 200:
                    raise RuntimeError(f"{url} answered {status}")
        finally:
            connection.close()

    began = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return latencies, time.perf_counter() - began


def metrics_share(calls: int = 20000) -> float:
    """Microseconds the metrics add per request in process: the middleware's bookkeeping, one
    model call with its tokens (counter and histogram updates)."""
    from kaos_runtime.metrics import Metrics

    metrics = Metrics()
    usage = {"prompt_tokens": 10, "completion_tokens": 20, "total_tokens": 30}
    began = time.perf_counter()
    for _ in range(calls):
        metrics.in_flight.inc()
        metrics.model_call(MODEL, "ok", 0.001, usage)
        metrics.in_flight.dec()
        metrics.request("ok", 0.002)
    return (time.perf_counter() - began) / calls * 1e6


async def main(args) -> None:
    log_dir = tempfile.mkdtemp(prefix="kaos-operating-bench-")
    started: list[Service] = []
    os.chdir(ROOT)
    try:
        mock = spawn("mock-model", ["-m", "tests.support.mock_model"], {}, log_dir)
        started.append(mock)
        wait_until_ok(mock)
        off = start_agent("bench-off", {"MODEL_API_URL": mock.url}, log_dir)
        on = start_agent("bench-on", {
            "MODEL_API_URL": mock.url, "AUTH_API_KEYS": f"another-key,{KEY}",
            "BUDGET_TOKENS_PER_MINUTE": "1000000000000", "BUDGET_TOKENS_PER_DAY": "1000000000000",
            "BUDGET_CALLER_TOKENS_PER_MINUTE": "1000000000000",
        }, log_dir)
        started += [off, on]
        chat = "/v1/chat/completions"
        agents = {"off": (off, None), "on": (on, KEY)}
        for agent, key in agents.values():
            await load(agent.url + chat, 300, 4, key)  # litellm imported, connections warm
        n, c = args.requests, args.concurrency
        figures = {name: {"c1": [], "rps": [], "c16": []} for name in agents}
        print(f"operating benchmark: budget + API-key auth on vs off (metrics in both), {args.rounds} interleaved "
              f"rounds of {n} requests at concurrency 1 and {2 * n} at {c}, {os.cpu_count()} CPUs")
        for _ in range(args.rounds):
            for name, (agent, key) in agents.items():
                figures[name]["c1"] += (await load(agent.url + chat, n, 1, key))[0]
            for name, (agent, key) in agents.items():
                latencies, wall = await load(agent.url + chat, 2 * n, c, key)
                figures[name]["c16"] += latencies
                figures[name]["rps"].append(len(latencies) / wall)
        for name in agents:
            f = figures[name]
            print(f"  {name:<4} c1 p50 {ms(statistics.median(f['c1'])):>9}  p99 {ms(percentile(f['c1'], 0.99)):>9}   "
                  f"c{c} p50 {ms(statistics.median(f['c16'])):>9}  {statistics.median(f['rps']):7.0f} req/s")
        added = (statistics.median(figures["on"]["c1"]) - statistics.median(figures["off"]["c1"])) * 1000
        lost = 1 - statistics.median(figures["on"]["rps"]) / statistics.median(figures["off"]["rps"])
        print(f"  added at c1 p50: {added:+.3f} ms (target < 0.2 ms); lost at c{c}: {lost:+.1%} (target < 10%)")
        print(f"  metrics bookkeeping per request, in process: {metrics_share():.1f} us")
    finally:
        for service in reversed(started):
            service.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    asyncio.run(main(parser.parse_args()))

"""Benchmark of the agent runtime against the bare mock model server it calls.

    python benchmarks/runtime_bench.py [--requests 2000] [--concurrency 16] [--base HEAD~1]

Starts its own processes on 127.0.0.1 (the mock model server from tests/support, agents
with `python -m kaos_runtime agent`), prints figures, and stops them. Not a test: it
asserts nothing; compare the figures with the targets in docs/runtime.md.

The last section, memory and startup, runs agents of this checkout and of ``--base`` (default
the previous commit, checked out as a git worktree; ``none`` leaves it out) in interleaved
rounds: spawn to ``/ready``, the first request after it against later ones (after the same
pause, and back to back), and the RSS idle, after the first model call and after
``--load-requests`` (10,000) requests.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import httpx  # noqa: E402

from benchmarks.commits import checked_out, short_sha  # noqa: E402
from benchmarks.services import MODEL, Services  # noqa: E402
from tests.support.processes import spawn, wait_until_ok  # noqa: E402

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


class RawConnection:
    """A minimal keep-alive HTTP/1.1 client (content-length bodies only), so that the figures
    measure the servers rather than the client library."""

    def __init__(self, url: str, headers: dict[str, str] | None = None) -> None:
        host_port = url.split("//", 1)[1].split("/", 1)[0]
        self.host, port = host_port.rsplit(":", 1)
        self.port = int(port)
        self.headers = "".join(f"{name}: {value}\r\n" for name, value in (headers or {}).items())
        self.reader = self.writer = None

    async def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        self.writer.write(
            f"POST {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\ncontent-type: application/json\r\n"
            f"{self.headers}content-length: {len(body)}\r\n\r\n".encode() + body
        )
        head = await self.reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        length = next(int(line.split(":", 1)[1]) for line in lines[1:] if line.lower().startswith("content-length:"))
        return status, await self.reader.readexactly(length)

    async def first_content(self, path: str, body: bytes, marker: bytes) -> float:
        """POST a streaming request; seconds until a piece of the body holding ``marker`` (the
        first content chunk) has arrived. The rest is read to the end (a content-length body
        or a chunked one)."""
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        start = time.perf_counter()
        self.writer.write(
            f"POST {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\n\r\n".encode() + body
        )
        head = (await self.reader.readuntil(b"\r\n\r\n")).decode("latin-1").lower()
        if " 200 " not in head.split("\r\n", 1)[0] + " ":
            raise RuntimeError(f"streaming request answered {head.splitlines()[0]}")
        seen, first = b"", None
        if "transfer-encoding: chunked" in head:
            while True:
                size = int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16)
                piece = await self.reader.readexactly(size + 2)
                if size == 0:
                    break
                seen = (seen + piece)[-4096:]
                if first is None and marker in seen:
                    first = time.perf_counter() - start
        else:
            length = int(head.split("content-length:", 1)[1].split("\r\n", 1)[0])
            seen = await self.reader.readexactly(length)
            first = time.perf_counter() - start if marker in seen else None
        if first is None:
            raise RuntimeError(f"no content chunk in the stream: {seen[:200]!r}")
        return first

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


def split_url(url: str) -> tuple[str, str]:
    base, _, path = url.partition("//")[2].partition("/")
    return url[: url.index(base) + len(base)], "/" + path


async def run_load(url: str, total: int, concurrency: int, body: dict | None = None,
                   before_each=None, headers: dict[str, str] | None = None) -> tuple[list[float], float]:
    """POST `body` `total` times with `concurrency` connections (with `headers` added); latencies and wall time."""
    latencies: list[float] = []
    remaining = iter(range(total))
    payload = json.dumps(body or BODY).encode()
    base, path = split_url(url)

    async def worker():
        connection = RawConnection(base, headers)
        try:
            for _ in remaining:
                if before_each is not None:
                    await before_each()
                start = time.perf_counter()
                status, _ = await connection.post(path, payload)
                latencies.append(time.perf_counter() - start)
                if status != 200:
                    raise RuntimeError(f"{url} answered {status}")
        finally:
            connection.close()

    began = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return latencies, time.perf_counter() - began


async def first_content_times(url: str, total: int) -> list[float]:
    """Streaming requests: time until the first chunk with content has arrived (the agent
    streams the model's pieces as they come, so that is before the body ends)."""
    base, path = split_url(url)
    payload = json.dumps({**BODY, "stream": True}).encode()
    connection = RawConnection(base)
    try:
        return [await connection.first_content(path, payload, b'"delta":{"content":"') for _ in range(total)]
    finally:
        connection.close()


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


@dataclass
class Lifetime:
    """One agent process from spawn to stop: seconds to /ready; the first request after it (sent
    PAUSE seconds after /ready answered) and, after the load, the median of 20 more each after
    the same pause, of 20 more back to back (each over a new connection, as the first) and the c1
    p50 over one kept connection (ms); RSS idle, after the first call and after the load (MiB).

    The pause makes the first request comparable: on this machine any request that follows an
    idle spell of a few hundred milliseconds is slower (the processes and the CPU wake up), in a
    process that has served thousands as much as in a new one."""

    ready: float
    first: float
    paused: float
    later: float
    steady: float
    idle: float
    after_first: float
    after_load: float


PAUSE = 0.3


async def after_pause(url: str) -> float:
    """One request over a new connection, sent after PAUSE seconds of quiet."""
    await asyncio.sleep(PAUSE)
    return (await run_load(url, 1, 1))[0][0]


async def paused_and_back_to_back(url: str) -> tuple[float, float]:
    """Medians of 20 requests each after the pause, and of 20 back to back (new connections)."""
    paused = statistics.median([await after_pause(url) for _ in range(20)])
    return paused, statistics.median([(await run_load(url, 1, 1))[0][0] for _ in range(20)])


async def lifetime(name: str, pythonpath: str, model_url: str, log_dir: str, load: int, concurrency: int) -> Lifetime:
    env = {"AGENT_NAME": name, "MODEL_NAME": MODEL, "MODEL_API_URL": model_url, "AGENT_LOG_LEVEL": "WARNING",
           "PYTHONPATH": pythonpath}
    began = time.perf_counter()
    service = spawn(name, ["-m", "kaos_runtime", "agent"], env, log_dir)
    try:
        wait_until_ok(service, "/ready", timeout=120)
        ready = time.perf_counter() - began
        pid = service.process.pid
        idle = rss_mib(pid)
        url = service.url + "/v1/chat/completions"
        first = await after_pause(url)
        after_first = rss_mib(pid)
        await run_load(url, load, concurrency)
        after_load = rss_mib(pid)
        paused, later = await paused_and_back_to_back(url)
        steady = statistics.median((await run_load(url, 500, 1))[0])
        return Lifetime(ready, first * 1000, paused * 1000, later * 1000, steady * 1000, idle, after_first,
                        after_load)
    finally:
        service.stop()


async def memory_and_startup(args, model_url: str, log_dir: str) -> None:
    """This checkout's runtime beside --base's, interleaved (ABBA...), medians printed."""
    with checked_out([args.base]) as [(base_tree, base_sha)]:
        sides = {f"this checkout ({short_sha(ROOT)}{'+changes' if dirty() else ''})": os.path.join(ROOT, "runtime"),
                 f"--base {args.base} ({base_sha})": os.path.join(base_tree, "runtime")}
        runs: dict[str, list[Lifetime]] = {label: [] for label in sides}
        for round_ in range(args.memory_rounds):
            order = list(sides) if round_ % 2 == 0 else list(reversed(sides))
            for label in order:
                runs[label].append(await lifetime(f"mem-{round_}-{len(runs[label])}", sides[label], model_url,
                                                  log_dir, args.load_requests, args.concurrency))
    print(f"memory and startup ({args.memory_rounds} interleaved rounds per side, medians; load: "
          f"{args.load_requests} requests at concurrency {args.concurrency}):")
    print(f"  {'':<34}{'spawn->/ready':>14}{'1st req':>10}{'paused':>10}{'later':>10}{'steady c1':>11}"
          f"{'RSS idle':>10}{'1st call':>10}{'load':>8}")
    for label, lifetimes in runs.items():
        def median(attribute: str) -> float:
            return statistics.median(getattr(run, attribute) for run in lifetimes)

        print(f"  {label:<34}{median('ready'):>12.2f} s{median('first'):>7.2f} ms{median('paused'):>7.2f} ms"
              f"{median('later'):>7.2f} ms"
              f"{median('steady'):>8.2f} ms"
              f"{median('idle'):>6.0f} MiB{median('after_first'):>6.0f} MiB{median('after_load'):>4.0f} MiB")
    paused, later = await paused_and_back_to_back(model_url + "/v1/chat/completions")
    print(f"  (the mock model alone: {paused * 1000:.2f} ms after the same pause, {later * 1000:.2f} ms back to back;"
          f" 1st req and paused are sent {PAUSE:g} s after the agent last served a request)")


def dirty() -> bool:
    return bool(subprocess.run(["git", "status", "--porcelain", "--", "runtime"], cwd=ROOT, capture_output=True,
                               text=True).stdout.strip())


async def main(args) -> None:
    with Services("kaos-bench-") as services:
        log_dir = services.log_dir
        mock = services.mock_model()
        model_env = {"MODEL_API_URL": mock.url}
        agent = services.agent("bench", model_env)
        n, c = args.requests, args.concurrency
        chat = "/v1/chat/completions"
        print(f"runtime benchmark: {n} requests per figure, concurrency 1 and {c}, {os.cpu_count()} CPUs")
        await run_load(agent.url + chat, 200, 4)  # imports litellm, warms connections
        await run_load(mock.url + chat, 200, 4)

        print("concurrency 1:")
        report("mock model directly", (await run_load(mock.url + chat, n, 1))[0])
        report("agent (direct client)", (await run_load(agent.url + chat, n, 1))[0])
        print(f"concurrency {c}:")
        report("mock model directly", *(await run_load(mock.url + chat, n * 2, c)))
        report("agent (direct client)", *(await run_load(agent.url + chat, n * 2, c)))

        print("streaming, time to first content (concurrency 1):")
        report("agent", await first_content_times(agent.url + chat, min(n, 500)))

        worker = services.agent("bench-worker", model_env)
        coordinator = services.agent("bench-coord", {
            **model_env, "PEER_AGENTS": "bench-worker",
            "PEER_AGENT_BENCH_WORKER_CARD_URL": worker.url + "/.well-known/agent",
        })
        delegate = '```delegate\n{"agent": "bench-worker", "task": "say hi"}\n```'
        script = json.dumps({"replies": [delegate, "worker says hi", "done"]}).encode()
        control = RawConnection(mock.url)

        async def queue_replies():
            await control.post("/_mock/script", script)

        hops = min(n, 500)
        await run_load(coordinator.url + chat, 50, 1, before_each=queue_replies)
        print("one delegation hop (concurrency 1; three model calls, two agents):")
        report("coordinator -> worker", (await run_load(coordinator.url + chat, hops, 1, before_each=queue_replies))[0])

        if args.acompletion:
            plain = services.agent("bench-acompletion", {**model_env, "MODEL_CLIENT": "acompletion"})
            await run_load(plain.url + chat, 100, 2)
            print("for comparison, MODEL_CLIENT=acompletion (litellm.acompletion per call):")
            report("agent c1", (await run_load(plain.url + chat, min(n, 1000), 1))[0])
            report(f"agent c{c}", *(await run_load(plain.url + chat, min(n, 1000) * 2, c)))

        colds = cold_start({"AGENT_NAME": "cold", "MODEL_API_URL": mock.url, "MODEL_NAME": MODEL,
                            "AGENT_LOG_LEVEL": "WARNING"}, log_dir, args.cold_rounds)
        print(f"cold start (spawn to first 200 on /health, {len(colds)} runs): "
              f"median {statistics.median(colds):.2f} s, max {max(colds):.2f} s")
        if args.base != "none":
            await memory_and_startup(args, mock.url, log_dir)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--cold-rounds", type=int, default=5)
    parser.add_argument("--base", default="HEAD~1",
                        help="the commit whose runtime the memory and startup section runs beside this one's "
                             "(none: leave the section out)")
    parser.add_argument("--memory-rounds", type=int, default=2)
    parser.add_argument("--load-requests", type=int, default=10_000)
    parser.add_argument("--acompletion", action="store_true",
                        help="also measure MODEL_CLIENT=acompletion (plain litellm.acompletion)")
    asyncio.run(main(parser.parse_args()))

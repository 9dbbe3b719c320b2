"""Figures for agent memory on Redis and for replicas (prints them; not a test).

    python benchmarks/memory_bench.py [--requests 2000] [--rounds 3] [--soak 10000]

1. The runtime against the mock model server, MEMORY_BACKEND=local against redis (a
   redis-server this script starts), interleaved round by round: p50 at concurrency 1 and
   throughput at concurrency 16. Each request is a new session: two memory writes (the user
   message and the answer), one Redis round trip each; a continued session adds one read.
2. `kaos up` (a control plane this script starts, with its own Redis): one Agent behind the
   gateway with replicas 1 against replicas 2, interleaved, concurrency 16, and the CPU each
   process (gateway, agents, Redis, mock model, load generator) spends per request, which says
   how many requests per second the machine's cores can serve at most.
3. A soak: --soak requests (new sessions all along) against one redis agent with
   MEMORY_MAX_SESSIONS=100: the agent's RSS and the agent's Redis key count as it goes.

Targets (issue 11): Redis adds under 1 ms at c1 p50 and keeps c16 throughput within 20%;
two replicas serve at least 1.6x one replica's c16 throughput; RSS flat within 10% and the key
count bounded over 10,000 requests. Everything shares this machine's cores (the load
generator, the gateway, the agents, the mock model and Redis), so read the replica figure
with `os.cpu_count()` in mind.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from benchmarks.runtime_bench import percentile, rss_mib, run_load  # noqa: E402
from benchmarks.services import Services, start_agent  # noqa: E402
from kaos.api import API_VERSION  # noqa: E402
from kaos.cli.client import Client  # noqa: E402
from kaos.local.ports import free_port  # noqa: E402
from kaos.local.state import read_state  # noqa: E402
from tests.support.polling import wait_until  # noqa: E402
from tests.support.processes import Service  # noqa: E402
from tests.support.redis_server import RedisServer  # noqa: E402

CHAT = "/v1/chat/completions"


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def descendants(pid: int) -> dict[int, str]:
    """The processes below ``pid`` (children, grandchildren...), each with its command line."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    parents[int(entry)] = int(stat.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
    found, frontier = {}, [pid]
    while frontier:
        parent = frontier.pop()
        for child, its_parent in parents.items():
            if its_parent == parent and child not in found:
                try:
                    with open(f"/proc/{child}/cmdline", "rb") as cmdline:
                        found[child] = cmdline.read().replace(b"\0", b" ").decode(errors="replace")
                except OSError:
                    continue
                frontier.append(child)
    return found


def role_of(cmdline: str) -> str:
    if ("kaos_runtime" in cmdline or "kaos-runtime" in cmdline) and " agent" in cmdline:
        return "agents"
    if "redis-server" in cmdline:
        return "redis"
    return "other"


def cpu_by_role(control_pid: int, mock_pid: int) -> dict[str, float]:
    """CPU seconds so far of the gateway (the control plane's process), the agent processes, Redis,
    the mock model and this load generator."""
    totals = {"gateway": cpu_seconds(control_pid), "agents": 0.0, "redis": 0.0, "other": 0.0,
              "mock model": cpu_seconds(mock_pid), "load generator": cpu_seconds(os.getpid())}
    for pid, cmdline in descendants(control_pid).items():
        totals[role_of(cmdline)] += cpu_seconds(pid)
    return totals


async def backends(mock: Service, redis: RedisServer, log_dir: str, requests: int, rounds: int) -> None:
    model_env = {"MODEL_API_URL": mock.url}
    local = start_agent("bench-local", model_env, log_dir)
    shared = start_agent("bench-redis", {**model_env, "MEMORY_BACKEND": "redis", "REDIS_URL": redis.url,
                                         "MEMORY_KEY_PREFIX": "bench:redis"}, log_dir)
    agents = {"local": local, "redis": shared}
    try:
        for agent in agents.values():
            await run_load(agent.url + CHAT, 300, 4)  # litellm imported, connections warm
        # Interleaved in slices, so that whatever else runs on the machine weighs on both alike.
        c1 = {name: [] for name in agents}
        c16 = {name: [] for name in agents}
        slices = 10
        for index in range(rounds * slices):
            order = list(agents.items()) if index % 2 == 0 else list(reversed(agents.items()))
            for name, agent in order:
                c1[name] += (await run_load(agent.url + CHAT, requests // slices, 1))[0]
            for name, agent in order:
                latencies, wall = await run_load(agent.url + CHAT, requests * 2 // slices, 16)
                c16[name].append((len(latencies), wall))
        print(f"1. runtime, memory backend local vs redis ({rounds * requests} requests at c1 and "
              f"{rounds * requests * 2} at c16 for each, interleaved in slices of {requests // slices}):")
        rates = {}
        for name in agents:
            rates[name] = sum(n for n, _ in c16[name]) / sum(w for _, w in c16[name])
            print(f"  {name:<6} c1 p50 {ms(statistics.median(c1[name])):>9}  p99 {ms(percentile(c1[name], 0.99)):>9}"
                  f"   c16 {rates[name]:7.0f} req/s")
        added = statistics.median(c1["redis"]) - statistics.median(c1["local"])
        print(f"  redis adds {ms(added)} at c1 p50 (target < 1 ms); c16 throughput {rates['redis'] / rates['local']:.0%} "
              f"of local (target >= 80%)")
    finally:
        local.stop()
        shared.stop()


def agent_manifest(replicas: int, mock_url: str) -> dict:
    return {"apiVersion": API_VERSION, "kind": "Agent", "metadata": {"name": "bench"},
            "spec": {"modelAPI": "llm", "model": "bench-model", "replicas": replicas, "waitForDependencies": False,
                     "memory": {"backend": "redis"},
                     "config": {"env": [{"name": "MODEL_API_URL", "value": mock_url},
                                        {"name": "AGENT_LOG_LEVEL", "value": "WARNING"}]}}}


async def replicas(mock: Service, home: Path, requests: int, rounds: int) -> None:
    port = free_port()
    env = {**os.environ, "KAOS_HOME": str(home), "PATH": f"{ROOT / '.tools/bin'}{os.pathsep}{os.environ['PATH']}"}
    control = subprocess.Popen([sys.executable, "-m", "kaos.local", "--port", str(port)], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        state = wait_until(lambda: read_state(home) if control.poll() is None else None, 60, what="the control plane")
        client = Client.of(state)
        wait_until(lambda: _answers(client), 60, what="the control plane")
        gateway = f"http://127.0.0.1:{port}/default/agent/bench"
        throughput: dict[int, list[float]] = {1: [], 2: []}
        p50: dict[int, list[float]] = {1: [], 2: []}
        cpu: dict[int, dict[str, float]] = {1: {}, 2: {}}  # CPU seconds per role, summed over rounds
        served = {1: 0, 2: 0}
        for _ in range(rounds):
            for count in (1, 2):
                client.apply([(agent_manifest(count, mock.url), "bench.yaml")])
                wait_until(lambda: _ready_replicas(client) == count, 120, interval=0.2,
                           what=f"{count} ready replica(s)")
                await run_load(gateway + CHAT, 200, 16)  # warm every replica and connection
                before = cpu_by_role(control.pid, mock.process.pid)
                latencies, wall = await run_load(gateway + CHAT, requests * 2, 16)
                after = cpu_by_role(control.pid, mock.process.pid)
                for role in after:
                    cpu[count][role] = cpu[count].get(role, 0.0) + after[role] - before.get(role, 0.0)
                served[count] += len(latencies)
                throughput[count].append(len(latencies) / wall)
                p50[count].append(statistics.median(latencies))
        print(f"2. kaos up, one Agent (redis memory) behind the gateway at c16 ({rounds} interleaved rounds, "
              f"{requests * 2} requests each; {os.cpu_count()} CPUs):")
        for count in (1, 2):
            print(f"  replicas {count}: {statistics.median(throughput[count]):7.0f} req/s, p50 "
                  f"{ms(statistics.median(p50[count]))}   (rounds: {', '.join(f'{v:.0f}' for v in throughput[count])})")
        print(f"  two replicas / one: {statistics.median(throughput[2]) / statistics.median(throughput[1]):.2f}x "
              "(target >= 1.6x)")
        print("  CPU per request (ms) by process; the gateway is one event loop, so 1000 / its figure is the"
              " most req/s it can proxy:")
        for count in (1, 2):
            shares = {role: seconds * 1000 / served[count] for role, seconds in cpu[count].items() if seconds > 0}
            print(f"  replicas {count}: " + ", ".join(f"{role} {value:.3f}" for role, value in shares.items())
                  + f"; total {sum(shares.values()):.3f} (the {os.cpu_count()} cores give "
                  f"{os.cpu_count() * 1000 / sum(shares.values()):.0f} req/s at most)")
    finally:
        subprocess.run([sys.executable, "-m", "kaos.cli", "down"], env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        try:
            control.wait(timeout=30)
        except subprocess.TimeoutExpired:
            control.kill()


def _answers(client: Client) -> bool:
    try:
        client.health()
        return True
    except Exception:
        return False


def _ready_replicas(client: Client) -> int:
    for item in client.resources("Agent"):
        if item["metadata"]["name"] == "bench":
            status = item.get("status") or {}
            return status.get("readyReplicas", 0) if status.get("replicas") == (item["spec"]["replicas"]) else -1
    return -1


async def soak(mock: Service, redis: RedisServer, log_dir: str, total: int) -> None:
    agent = start_agent("bench-soak", {"MODEL_API_URL": mock.url, "MEMORY_BACKEND": "redis", "REDIS_URL": redis.url,
                                       "MEMORY_KEY_PREFIX": "bench:soak", "MEMORY_MAX_SESSIONS": "100"}, log_dir)
    try:
        body = {"messages": [{"role": "user", "content": "soak " + "x" * 200}]}
        marks = sorted({total // 10, total // 2, total})
        done, rows = 0, []
        began = time.perf_counter()
        for mark in marks:
            await run_load(agent.url + CHAT, mark - done, 8, body)
            done = mark
            rows.append((done, rss_mib(agent.process.pid), len(redis.keys("bench:soak:*"))))
        seconds = time.perf_counter() - began
        print(f"3. soak: {total} requests (new sessions, c8, MEMORY_MAX_SESSIONS=100) in {seconds:.0f} s:")
        for done, rss, keys in rows:
            print(f"  after {done:>6} requests: agent RSS {rss:6.1f} MiB, Redis keys {keys}")
        first, last = rows[0][1], rows[-1][1]
        print(f"  RSS from {rows[0][0]} to {rows[-1][0]} requests: {last / first - 1:+.1%} (target within 10%); "
              f"keys at most {max(r[2] for r in rows)} (bound: 100 sessions + 2)")
        stored = httpx.get(agent.url + "/memory/events", params={"limit": 0}).json()["total"]
        print(f"  events kept: {stored} (100 sessions x 2 events)")
    finally:
        agent.stop()


async def main(args) -> None:
    with Services("kaos-memory-bench-") as services:
        log_dir = services.log_dir
        redis = services.add(RedisServer(Path(log_dir) / "redis")).start()
        mock = services.mock_model()
        print(f"memory benchmark on {os.cpu_count()} CPUs (logs in {log_dir})")
        if "backends" in args.parts:
            await backends(mock, redis, log_dir, args.requests, args.rounds)
        if "replicas" in args.parts:
            await replicas(mock, Path(log_dir) / "kaos-home", args.requests, args.rounds)
        if "soak" in args.parts:
            await soak(mock, redis, log_dir, args.soak)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--soak", type=int, default=10000)
    parser.add_argument("--parts", nargs="+", default=["backends", "replicas", "soak"],
                        choices=["backends", "replicas", "soak"])
    asyncio.run(main(parser.parse_args()))

"""What operating features cost per request: metrics, a token budget and API-key auth all on,
against all off.

    python benchmarks/operating_bench.py [--requests 1000] [--concurrency 16] [--rounds 10]

Starts the mock model server and two agents on 127.0.0.1: "off" (METRICS_ENABLED=false: no
/metrics, no metric middleware or wrappers; no budget; no auth) and "on" (metrics as by default,
BUDGET_TOKENS_PER_MINUTE/DAY and BUDGET_CALLER_TOKENS_PER_MINUTE set high enough never to
refuse, AUTH_API_KEYS with the key sent on every request). Each round measures both at
concurrency 1, then both at the higher concurrency, and the side that goes first alternates
from round to round, so that load from anything else on the machine (and any drift) falls on
both alike. The deltas are given pooled and as the median of the rounds' paired differences (the
steadier figure on a machine that runs other work), with the agents' own CPU time per request at
the higher concurrency (from /proc). Not a test: it prints figures; the target is under 0.2 ms
added at concurrency 1 (p50) and under 10% fewer requests/s at concurrency 16.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "runtime"))

from benchmarks.runtime_bench import ms, percentile, run_load  # noqa: E402
from benchmarks.services import MODEL, Services  # noqa: E402

KEY = "bench-key-0123456789abcdef"


def auth(key: str | None) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"} if key else {}


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) the process has used so far (Linux /proc)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def metrics_share(calls: int = 20000) -> float:
    """Microseconds the metrics add per request in process: the middleware's bookkeeping, one
    model call with its tokens (counter and histogram updates), a new session's two events
    noted as active (kaos_agent_active_sessions)."""
    from kaos_runtime.core.metrics import Metrics

    metrics = Metrics()
    usage = {"prompt_tokens": 10, "completion_tokens": 20, "total_tokens": 30}
    sessions = [f"session-{number}" for number in range(calls)]
    began = time.perf_counter()
    for session in sessions:
        metrics.in_flight += 1
        metrics.active_sessions.touch(session)
        metrics.model_call(MODEL, "ok", 0.001, usage)
        metrics.active_sessions.touch(session)
        metrics.in_flight -= 1
        metrics.request("/v1/chat/completions", "ok", 0.002)
    return (time.perf_counter() - began) / calls * 1e6


async def main(args) -> None:
    with Services("kaos-operating-bench-") as services:
        mock = services.mock_model()
        off = services.agent("bench-off", {"MODEL_API_URL": mock.url, "METRICS_ENABLED": "false"})
        on = services.agent("bench-on", {
            "MODEL_API_URL": mock.url, "METRICS_ENABLED": "true", "AUTH_API_KEYS": f"another-key,{KEY}",
            "BUDGET_TOKENS_PER_MINUTE": "1000000000000", "BUDGET_TOKENS_PER_DAY": "1000000000000",
            "BUDGET_CALLER_TOKENS_PER_MINUTE": "1000000000000",
        })
        chat = "/v1/chat/completions"
        agents = {"off": (off, None), "on": (on, KEY)}
        for agent, key in agents.values():
            await run_load(agent.url + chat, 300, 4, headers=auth(key))  # litellm imported, connections warm
        n, c = args.requests, args.concurrency
        figures = {name: {"c1": [], "p50": [], "rps": [], "c16": [], "cpu": []} for name in agents}
        print(f"operating benchmark: metrics + budget + API-key auth all on vs all off, {args.rounds} interleaved "
              f"rounds of {n} requests at concurrency 1 and {2 * n} at {c} (the side that goes first alternates), "
              f"{os.cpu_count()} CPUs")
        for number in range(args.rounds):
            order = list(agents) if number % 2 == 0 else list(reversed(agents))
            for name in order:
                agent, key = agents[name]
                latencies = (await run_load(agent.url + chat, n, 1, headers=auth(key)))[0]
                figures[name]["c1"] += latencies
                figures[name]["p50"].append(statistics.median(latencies))
            for name in order:
                agent, key = agents[name]
                before = cpu_seconds(agent.process.pid)
                latencies, wall = await run_load(agent.url + chat, 2 * n, c, headers=auth(key))
                figures[name]["cpu"].append((cpu_seconds(agent.process.pid) - before) / len(latencies))
                figures[name]["c16"] += latencies
                figures[name]["rps"].append(len(latencies) / wall)
            on, off = figures["on"], figures["off"]
            print(f"  round {number + 1:>2} ({order[0]} first): c1 p50 off {ms(off['p50'][-1])}, on {ms(on['p50'][-1])}; "
                  f"c{c} off {off['rps'][-1]:.0f} req/s, on {on['rps'][-1]:.0f} req/s")
        for name in agents:
            f = figures[name]
            print(f"  {name:<4} c1 p50 {ms(statistics.median(f['c1'])):>9}  p99 {ms(percentile(f['c1'], 0.99)):>9}   "
                  f"c{c} p50 {ms(statistics.median(f['c16'])):>9}  {statistics.median(f['rps']):7.0f} req/s   "
                  f"agent CPU {statistics.median(f['cpu']) * 1e6:5.0f} us/request")
        on, off = figures["on"], figures["off"]
        added = (statistics.median(on["c1"]) - statistics.median(off["c1"])) * 1000
        paired_added = statistics.median(a - b for a, b in zip(on["p50"], off["p50"])) * 1000
        lost = 1 - statistics.median(on["rps"]) / statistics.median(off["rps"])
        paired_lost = statistics.median(1 - a / b for a, b in zip(on["rps"], off["rps"]))
        cpu_added = statistics.median(a - b for a, b in zip(on["cpu"], off["cpu"])) * 1e6
        print(f"  added at c1 p50: {added:+.3f} ms (median of the rounds' differences: {paired_added:+.3f} ms; "
              f"target < 0.2 ms)")
        print(f"  lost at c{c}: {lost:+.1%} of the throughput (median of the rounds' losses: {paired_lost:+.1%}; "
              f"target < 10%)")
        print(f"  agent CPU added per request at c{c}: {cpu_added:+.0f} us (median of the rounds' differences)")
        print(f"  metrics bookkeeping per request, in process: {metrics_share():.1f} us")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=10)
    asyncio.run(main(parser.parse_args()))

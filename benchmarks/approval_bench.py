"""What approvals cost: a chat whose agent gates a tool it does not call, against one without a
policy; and how soon an approved call starts after its decision.

    python benchmarks/approval_bench.py [--requests 300] [--rounds 6] [--decisions 20]

Starts the mock model server, a python-string MCP server and agents on 127.0.0.1, all with the
same tools (native tool calling): "plain" (no policy) and "gated" (TOOL_APPROVAL_REQUIRED names
a tool the model never calls here). Each round measures both at concurrency 1, the side that
goes first alternating; the p50s are pooled over the rounds and the median of the rounds'
paired differences is given too. Then, on an agent with local memory and on one with its memory
(and so its approvals) in a real redis-server: the model asks for the gated tool, the bench
waits for the pending approval, notes the time and POSTs the decision; the tool returns the time
it started (the same clock: one machine), so the figure is from sending POST /approvals/{id} to
the tool function starting (the decision's HTTP request, waking the waiting run, the MCP call).
Not a test: it prints figures; the targets are "within noise" for the first and under 50 ms
(local) and 100 ms (Redis) for the second.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time

import httpx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "runtime"))

from benchmarks.runtime_bench import ms, percentile, run_load  # noqa: E402
from benchmarks.services import Services  # noqa: E402
from tests.support.processes import Service  # noqa: E402
from tests.support.redis_server import RedisServer  # noqa: E402

TOOLS = '''
import time

def stamp() -> str:
    """The time the call started (epoch seconds)."""
    return repr(time.time())

def echo(message: str) -> str:
    """Return the message."""
    return message
'''
CHAT = "/v1/chat/completions"


async def decision_to_tool(agent: Service, mock: Service, http: httpx.AsyncClient, session: str) -> float:
    """Seconds from sending the approval to the gated tool starting."""
    await http.post(mock.url + "/_mock/script", json={"replies": [
        {"content": "", "tool_calls": [{"name": "stamp", "arguments": {}}]}, "done"]})
    body = {"model": "m", "session_id": session, "messages": [{"role": "user", "content": "stamp"}]}
    answer = asyncio.ensure_future(http.post(agent.url + CHAT, json=body, timeout=60))
    deadline = time.monotonic() + 30
    while True:
        found = (await http.get(agent.url + "/approvals", params={"session_id": session})).json()["approvals"]
        if found:
            break
        if answer.done() or time.monotonic() > deadline:
            raise RuntimeError(f"no pending approval on {agent.name}: {answer.result().text if answer.done() else ''}")
        await asyncio.sleep(0.005)
    sent = time.time()
    decided = await http.post(f"{agent.url}/approvals/{found[0]['id']}", json={"decision": "approve"})
    if decided.status_code != 200:
        raise RuntimeError(decided.text)
    if (await answer).status_code != 200:
        raise RuntimeError((await answer).text)
    requests = (await http.get(mock.url + "/_mock/requests")).json()["requests"]
    started = next(float(m["content"]) for m in requests[-1]["messages"] if m["role"] == "tool")
    await http.delete(mock.url + "/_mock/requests")
    return started - sent


async def main(args) -> None:
    with Services("kaos-approval-bench-") as services:
        mock = services.mock_model()
        tools = services.spawn("tools", ["-m", "kaos_runtime", "mcp"], {"MCP_TOOLS_STRING": TOOLS})
        redis = services.add(RedisServer(os.path.join(services.log_dir, "redis"))).start()
        common = {"MODEL_API_URL": mock.url, "MODEL_TOOL_CALLING": "native", "MCP_SERVERS": "tools",
                  "MCP_SERVER_TOOLS_URL": tools.url + "/mcp"}
        agents = {"plain": services.agent("bench-plain", common),
                  "gated": services.agent("bench-gated", {**common, "TOOL_APPROVAL_REQUIRED": "stamp"})}
        local = agents["gated"]
        durable = services.agent("bench-redis", {**common, "TOOL_APPROVAL_REQUIRED": "stamp", "MEMORY_BACKEND": "redis",
                                                 "REDIS_URL": redis.url})
        for agent in agents.values():
            await run_load(agent.url + CHAT, 200, 4)  # litellm imported, tools discovered, connections warm
        n = args.requests
        print(f"approval benchmark: {args.rounds} interleaved rounds of {n} chats at concurrency 1 (a gated tool "
              f"offered, not called, vs no policy), {os.cpu_count()} CPUs")
        p50s: dict[str, list[float]] = {name: [] for name in agents}
        pooled: dict[str, list[float]] = {name: [] for name in agents}
        for number in range(args.rounds):
            for name in (list(agents) if number % 2 == 0 else list(reversed(agents))):
                latencies = (await run_load(agents[name].url + CHAT, n, 1))[0]
                pooled[name] += latencies
                p50s[name].append(percentile(latencies, 0.5))
        for name in agents:
            print(f"  {name:6s} c1 p50 {ms(percentile(pooled[name], 0.5))}  p99 {ms(percentile(pooled[name], 0.99))}"
                  f"  (round p50s {', '.join(ms(v) for v in p50s[name])})")
        paired = statistics.median(g - p for g, p in zip(p50s["gated"], p50s["plain"]))
        print(f"  gated - plain: pooled p50 {ms(percentile(pooled['gated'], 0.5) - percentile(pooled['plain'], 0.5))},"
              f" median of the rounds' paired p50 differences {ms(paired)}")

        print(f"time from POST /approvals/{{id}} to the tool call starting ({args.decisions} decisions each):")
        async with httpx.AsyncClient(timeout=60) as http:
            for label, agent in (("local", local), ("redis", durable)):
                await decision_to_tool(agent, mock, http, f"warm-{label}")
                times = [await decision_to_tool(agent, mock, http, f"bench-{label}-{i}") for i in range(args.decisions)]
                print(f"  {label:6s} p50 {ms(percentile(times, 0.5))}  p90 {ms(percentile(times, 0.9))}"
                      f"  max {ms(max(times))}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--decisions", type=int, default=20)
    asyncio.run(main(parser.parse_args()))

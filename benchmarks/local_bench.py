"""Figures for `kaos up` (prints them; not a test).

1. Time from `kaos up --detach -f examples/quickstart/` to every resource Ready.
2. The gateway's added latency per request (p50, p99): GET /health on the coordinator through
   the gateway against the same request on the agent's own port, interleaved, keep-alive.
3. Chats through the gateway: an Agent on the mock model server (tests/support/mock_model.py;
   local memory, a new session per request) behind a control plane of this checkout, POST
   /v1/chat/completions through the gateway and on the agent's own port, c16 throughput and c1
   p50, in interleaved rounds. With ``--base DIR`` (a checkout whose chart dependencies are
   built, e.g. /work/main) a second control plane runs that checkout's code
   (PYTHONPATH=DIR/operator:DIR/runtime) beside it, and the rounds alternate between the two.

Run from the project root:
    python benchmarks/local_bench.py [--requests 2000] [--chat-requests 2000] [--rounds 4] [--base DIR] [--chat-only]
Targets on a 2-core machine: all Ready within 20 s; gateway overhead under 1 ms at p50.
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
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.runtime_bench import ms, run_load  # noqa: E402
from kaos.api import API_VERSION  # noqa: E402
from kaos.cli.client import Client  # noqa: E402
from kaos.local.ports import free_port  # noqa: E402
from tests.support.polling import wait_until  # noqa: E402
from tests.support.processes import spawn, wait_until_ok  # noqa: E402

CHAT = "/v1/chat/completions"


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def time_up(env: dict, port: int) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "kaos.cli", "up", "--detach", "--port", str(port), "-f", str(ROOT / "examples/quickstart")],
        env=env, check=True, stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - start


def gateway_overhead(gateway: str, direct: str, requests: int) -> tuple[list[float], list[float]]:
    through, straight = [], []
    with httpx.Client() as http:
        for _ in range(50):  # warm both connections
            http.get(f"{gateway}/health")
            http.get(f"{direct}/health")
        for _ in range(requests):
            for url, samples in ((f"{gateway}/health", through), (f"{direct}/health", straight)):
                start = time.perf_counter()
                response = http.get(url)
                samples.append((time.perf_counter() - start) * 1000)
                assert response.status_code == 200, response.text
    return through, straight


class ChatPlane:
    """A control plane of one checkout (``tree``; None: this one) with one Agent on the mock model.
    Spoken to over its admin API as that checkout's CLI would (the token when its state file has one)."""

    def __init__(self, name: str, tree: Path | None, mock_url: str):
        self.name = name
        self.home = Path(tempfile.mkdtemp(prefix=f"kaos-bench-{name}-"))
        self.port = free_port()
        env = {**os.environ, "KAOS_HOME": str(self.home), "PATH": f"{ROOT / '.tools/bin'}{os.pathsep}{os.environ['PATH']}"}
        if tree is not None:
            env["PYTHONPATH"] = f"{tree / 'operator'}{os.pathsep}{tree / 'runtime'}"
        self.process = subprocess.Popen([sys.executable, "-m", "kaos.local", "--port", str(self.port)], env=env,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        state = wait_until(lambda: self._state(), 60, what=f"the control plane of {name}")
        headers = {"Authorization": f"Bearer {state['token']}"} if state.get("token") else {}
        self.admin = httpx.Client(base_url=f"http://127.0.0.1:{self.port}/_kaos", headers=headers, timeout=30)
        agent = {"apiVersion": API_VERSION, "kind": "Agent", "metadata": {"name": "bench"},
                 "spec": {"modelAPI": "llm", "model": "bench-model", "waitForDependencies": False,
                          "config": {"env": [{"name": "MODEL_API_URL", "value": mock_url},
                                             {"name": "AGENT_LOG_LEVEL", "value": "WARNING"}]}}}
        self.admin.post("/apply", json={"documents": [{"manifest": agent, "source": "bench"}]}).raise_for_status()
        self.direct = wait_until(self._endpoint, 120, interval=0.2, what=f"the agent of {name} to be Ready")
        self.gateway = f"http://127.0.0.1:{self.port}/default/agent/bench"

    def _state(self) -> dict | None:
        if self.process.poll() is not None:
            raise RuntimeError(f"the control plane of {self.name} exited with {self.process.returncode}")
        try:
            return json.loads((self.home / "controlplane.json").read_text())
        except (OSError, ValueError):
            return None

    def _endpoint(self) -> str | None:
        status = (self.admin.get("/resources").json()["items"][0].get("status") or {})
        return status.get("endpoint") if status.get("ready") else None

    def stop(self) -> None:
        self.admin.post("/down", json={})
        self.admin.close()
        self.process.wait(timeout=60)


async def chat_rounds(planes: list[ChatPlane], requests: int, rounds: int) -> None:
    """c16 throughput and c1 p50 of each plane's gateway and agent, the planes' order alternating per round."""
    figures = {(plane.name, where): {"c16": [], "c1": []} for plane in planes for where in ("gateway", "direct")}
    for plane in planes:
        await run_load(plane.gateway + CHAT, 300, 16)  # warm the agent, the gateway and their connections
    for round_ in range(rounds):
        for plane in planes if round_ % 2 == 0 else planes[::-1]:
            for where, url in (("gateway", plane.gateway), ("direct", plane.direct)):
                latencies, wall = await run_load(url + CHAT, requests, 16)
                figures[(plane.name, where)]["c16"].append(len(latencies) / wall)
                figures[(plane.name, where)]["c1"].append(statistics.median((await run_load(url + CHAT, requests // 4, 1))[0]))
    print(f"3. chats (POST {CHAT}, mock model, new session each) through the gateway and on the agent's port: "
          f"{rounds} interleaved rounds of {requests} at c16 and {requests // 4} at c1, {os.cpu_count()} CPUs")
    for (name, where), values in figures.items():
        print(f"  {name:<8} {where:<8} c16 {statistics.median(values['c16']):6.0f} req/s   c1 p50 "
              f"{ms(statistics.median(values['c1'])):>9}   (c16 rounds: {', '.join(f'{v:.0f}' for v in values['c16'])})")
    for plane in planes:
        gateway, direct = figures[(plane.name, "gateway")], figures[(plane.name, "direct")]
        print(f"  {plane.name}: the gateway keeps {statistics.median(gateway['c16']) / statistics.median(direct['c16']):.0%}"
              f" of the direct c16 throughput and adds {ms(statistics.median(gateway['c1']) - statistics.median(direct['c1']))}"
              " at c1 p50")


def chats(requests: int, rounds: int, base: Path | None) -> None:
    log_dir = tempfile.mkdtemp(prefix="kaos-bench-logs-")
    mock = spawn("mock-model", ["-m", "tests.support.mock_model"], {}, log_dir)
    planes: list[ChatPlane] = []
    try:
        wait_until_ok(mock)
        planes.append(ChatPlane("this", None, mock.url))
        if base is not None:
            planes.append(ChatPlane("base", base, mock.url))
        asyncio.run(chat_rounds(planes, requests, rounds))
    finally:
        for plane in planes:
            plane.stop()
        mock.stop()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--chat-requests", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--base", type=Path, help="a checkout (chart dependencies built) whose gateway to compare")
    parser.add_argument("--chat-only", action="store_true", help="only the chats (3.)")
    args = parser.parse_args()
    if args.chat_only:
        chats(args.chat_requests, args.rounds, args.base)
        return 0
    home = Path(tempfile.mkdtemp(prefix="kaos-bench-"))
    port = free_port()
    env = {**os.environ, "KAOS_HOME": str(home), "PATH": f"{ROOT / '.tools/bin'}{os.pathsep}{os.environ['PATH']}"}
    os.environ["KAOS_HOME"] = str(home)
    try:
        seconds = time_up(env, port)
        print(f"kaos up --detach (quickstart: 1 ModelAPI, 1 MCPServer, 2 Agents) -> all Ready: {seconds:.1f} s (target < 20 s)")
        client = Client.from_home(home)
        coordinator = next(r for r in client.resources("Agent") if r["metadata"]["name"] == "coordinator")
        direct = coordinator["status"]["endpoint"]
        gateway = f"http://127.0.0.1:{port}/default/agent/coordinator"
        through, straight = gateway_overhead(gateway, direct, args.requests)
        for label, fraction in (("p50", 0.5), ("p99", 0.99)):
            g, d = percentile(through, fraction), percentile(straight, fraction)
            print(f"GET /health {label}: direct {d:.3f} ms, via gateway {g:.3f} ms, overhead {g - d:.3f} ms")
        print(f"({args.requests} requests each, interleaved, keep-alive; target overhead < 1 ms at p50)")
        print(f"mean overhead: {statistics.mean(through) - statistics.mean(straight):.3f} ms")
    finally:
        subprocess.run([sys.executable, "-m", "kaos.cli", "down"], env=env, stdout=subprocess.DEVNULL)
    chats(args.chat_requests, args.rounds, args.base)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What checking a user's token costs an agent: OIDC access tokens (a real issuer, Ory Hydra)
against API keys and no authentication, interleaved in one run.

    python benchmarks/identity_bench.py [--requests 400] [--rounds 6] [--delegations 50]

Starts Ory Hydra (scripts/setup-identity builds it) and three agents on 127.0.0.1: "open" (no
authentication), "key" (AUTH_API_KEYS) and "oidc" (AUTH_OIDC_ISSUER; its keys discovered on the
first request, which the warm-up sends). Each round sends ``--requests`` GET /v1/models (an
authenticated route that does no other work) to each, one at a time over one kept-alive
connection, the order of the three rotating per round; the p50s are pooled over the rounds and
the median of the rounds' paired differences (oidc - open, oidc - key) is printed too (on a
loaded machine these HTTP figures carry more noise than the difference). Then the agent's own
check in this process, without HTTP: a warm token (an agent verifies a token once and remembers
it until it expires), an API key, and a token it has not seen (signature, issuer, audience,
expiry; the keys already fetched), the cost of a new sign-in's first request. Not a test: it
prints figures; the target is <= 0.1 ms p50 added per request.

Then delegation (``--delegations`` per side and round): a worker that knows only API keys, and two
coordinators that delegate to it with their key, scripted (DEBUG_MOCK_RESPONSES: a ``delegate``
block, then the answer): "key" is called with an API key (no person: no on-behalf-of
assertion), "user" with a user's token (the signed assertion of the user and their groups goes
with the delegation, and the worker verifies it). Chat completions are timed end to end,
interleaved; the target is "user" <= 1.2x "key".
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
from pathlib import Path

import httpx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "runtime"))
sys.path.insert(0, os.path.join(ROOT, "operator"))

from benchmarks.runtime_bench import ms  # noqa: E402
from benchmarks.services import start_agent  # noqa: E402
from kaos_runtime.core.auth import Verifier  # noqa: E402
from kaos_runtime.core.oidc import OidcVerifier  # noqa: E402
from kaos_runtime.core.settings import AuthSettings  # noqa: E402
from tests.support.hydra import Hydra, hydra_binary  # noqa: E402

AUDIENCE = "bench-agent"
KEY = "bench-key-0123456789"


def models_request(number: int) -> tuple[str, str, dict | None]:
    """GET /v1/models: an authenticated route that does no other work."""
    return "GET", "/v1/models", None


def delegating_chat(number: int) -> tuple[str, str, dict | None]:
    """A chat completion the coordinator answers after one delegation."""
    return "POST", "/v1/chat/completions", {
        "model": "m", "messages": [{"role": "user", "content": f"ask the worker {number}"}]}


async def requests_timed(url: str, headers: dict, count: int, request, expect: str | None = None,
                         warm: int = 0) -> list[float]:
    """``count`` requests one at a time over one kept-alive connection, each timed end to end,
    after ``warm`` untimed ones (the connection open, the route warm)."""
    found = []
    async with httpx.AsyncClient(headers=headers, timeout=30) as http:
        for number in range(warm + count):
            method, path, body = request(number)
            began = time.perf_counter()
            response = await http.request(method, url + path, json=body)
            if number >= warm:
                found.append(time.perf_counter() - began)
            answered = response.status_code == 200 and (
                expect is None or response.json()["choices"][0]["message"]["content"] == expect)
            if not answered:
                raise RuntimeError(f"{url}: {response.status_code} {response.text}")
    return found


async def interleaved(urls: dict[str, str], headers: dict[str, dict], rounds: int, measure) -> tuple[dict, dict]:
    """Each side measured once per round, the sides' order rotating per round: the pooled times
    and each round's median, per side."""
    names = list(urls)
    pooled: dict[str, list[float]] = {name: [] for name in names}
    medians: dict[str, list[float]] = {name: [] for name in names}
    for round_ in range(rounds):
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            found = await measure(urls[name], headers[name])
            pooled[name] += found
            medians[name].append(statistics.median(found))
    return pooled, medians


async def timed(call, count: int) -> list[float]:
    found = []
    for _ in range(count):
        began = time.perf_counter()
        await call()
        found.append(time.perf_counter() - began)
    return found


def scripted_delegations(count: int) -> str:
    """A coordinator's DEBUG_MOCK_RESPONSES: ``count`` turns of a delegation, then its answer."""
    block = "```delegate\n" + json.dumps({"agent": "bench-worker", "task": "answer"}) + "\n```"
    return json.dumps([block, "done"] * count)


async def delegation(hydra: Hydra, token: str, args, log_dir: str, agents: list) -> None:
    """Delegations with and without the user's identity travelling with them, interleaved."""
    total = args.delegations * args.rounds
    worker = start_agent("bench-worker", {"AUTH_API_KEYS": "coordinator-key",
                                          "DEBUG_MOCK_RESPONSES": json.dumps(["worked"] * 2 * (total + 1))}, log_dir)
    agents.append(worker)
    peer = {"PEER_AGENTS": "bench-worker", "PEER_AGENT_BENCH_WORKER_CARD_URL": worker.url + "/.well-known/agent",
            "AUTH_OUTBOUND_TOKEN": "coordinator-key", "DEBUG_MOCK_RESPONSES": scripted_delegations(total + 1)}
    sides = {
        "key": ({**peer, "AUTH_API_KEYS": KEY}, {"Authorization": f"Bearer {KEY}"}),
        "user": ({**peer, "AUTH_OIDC_ISSUER": hydra.issuer, "AUTH_OIDC_AUDIENCE": AUDIENCE},
                 {"Authorization": f"Bearer {token}"}),
    }
    services = {}
    for name, (env, headers) in sides.items():
        services[name] = start_agent(f"bench-coord-{name}", env, log_dir)
        agents.append(services[name])
        await requests_timed(services[name].url, headers, 1, delegating_chat, "done")  # the worker's card read

    async def measure(url: str, headers: dict) -> list[float]:
        return await requests_timed(url, headers, args.delegations, delegating_chat, "done")
    pooled, medians = await interleaved({name: services[name].url for name in sides},
                                        {name: sides[name][1] for name in sides}, args.rounds, measure)
    print(f"a chat completion that delegates once, {args.delegations} x {args.rounds} rounds each, interleaved (p50):")
    for name in sides:
        print(f"  {name:<6} {ms(statistics.median(pooled[name])):>10}")
    ratios = [user / key for user, key in zip(medians["user"], medians["key"])]
    print(f"  user / key {statistics.median(ratios):.3f}x (median of the rounds' ratios; target <= 1.2x)")


async def in_process(hydra: Hydra, token: str, count: int) -> None:
    """The agent's own code, without HTTP: a warm token, an API key, a token not seen before."""
    oidc = Verifier(AuthSettings.from_env({"AUTH_OIDC_ISSUER": hydra.issuer, "AUTH_OIDC_AUDIENCE": AUDIENCE}))
    keys = Verifier(AuthSettings.from_env({"AUTH_API_KEYS": f"other-key,{KEY}"}))
    await oidc.principal(token)  # the keys fetched, the token verified once
    fresh = OidcVerifier(hydra.issuer, AUDIENCE)
    await fresh.user(token)
    print("in process (p50):")
    for name, call in (("a warm token", lambda: oidc.principal(token)), ("an API key", lambda: keys.principal(KEY)),
                       ("a token not seen before", lambda: fresh.check(token, time.time()))):
        print(f"  {name:<24} {statistics.median(await timed(call, count)) * 1e6:8.1f} us")


async def main(args) -> None:
    binary = hydra_binary()
    if binary is None:
        raise SystemExit("Ory Hydra is missing: run scripts/setup-identity")
    log_dir = tempfile.mkdtemp(prefix="kaos-identity-bench-")
    hydra = Hydra(binary, Path(log_dir))
    agents = []
    try:
        token = hydra.token(hydra.client([AUDIENCE]), "alice", AUDIENCE)
        sides = {
            "open": ({}, {}),
            "key": ({"AUTH_API_KEYS": KEY}, {"Authorization": f"Bearer {KEY}"}),
            "oidc": ({"AUTH_OIDC_ISSUER": hydra.issuer, "AUTH_OIDC_AUDIENCE": AUDIENCE},
                     {"Authorization": f"Bearer {token}"}),
        }
        services = {}
        for name, (env, _) in sides.items():
            services[name] = start_agent(f"bench-{name}", env, log_dir)
            agents.append(services[name])

        async def measure(url: str, headers: dict) -> list[float]:
            return await requests_timed(url, headers, args.requests, models_request, warm=1)
        pooled, medians = await interleaved({name: services[name].url for name in sides},
                                            {name: sides[name][1] for name in sides}, args.rounds, measure)
        print(f"GET /v1/models, {args.requests} requests x {args.rounds} rounds each, interleaved (p50):")
        for name in sides:
            print(f"  {name:<6} {ms(statistics.median(pooled[name])):>10}")
        for other in ("open", "key"):
            paired = [a - b for a, b in zip(medians["oidc"], medians[other])]
            print(f"  oidc - {other:<5} {ms(statistics.median(paired)):>10} (median of the rounds' differences)")
        await in_process(hydra, token, 10 * args.requests)
        await delegation(hydra, token, args, log_dir, agents)
    finally:
        for service in agents:
            service.stop()
        hydra.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--delegations", type=int, default=50, help="delegating chats per side and round")
    asyncio.run(main(parser.parse_args()))

"""kaos_runtime.clients.refresh: single-flight, rate-limited background refresh."""

from __future__ import annotations

import asyncio

from kaos_runtime.clients.refresh import Refresher


async def test_refresher_is_single_flight_bounded_and_rate_limited():
    calls = []
    release = asyncio.Event()

    async def slow_discovery():
        calls.append(1)
        await release.wait()

    refresher = Refresher(slow_discovery, interval=60)
    await asyncio.gather(refresher.run_if_due(wait=0.05), refresher.run_if_due(wait=0.05))
    assert len(calls) == 1  # one discovery in flight, callers waited a bounded time
    release.set()
    await refresher.run_if_due(wait=1)
    await refresher.run_if_due(wait=1)
    assert len(calls) == 1  # not due again before the interval
    await refresher.run(wait=1)
    assert len(calls) == 2  # an explicit run does not wait for the interval

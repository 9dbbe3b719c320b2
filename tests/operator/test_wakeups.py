"""What paces the operator (kaos.operator.wakeups): the status passes' wake-ups and the helm gate."""

import asyncio

from kaos.operator.wakeups import HelmGate, Wakeups, resync_period
from kaos.reconcile import Ref

LLM = Ref("ModelAPI", "team", "llm")
AGENT = Ref("Agent", "team", "solo")


async def test_a_pass_waits_until_woken_and_an_event_of_a_dependency_wakes_its_dependents():
    wakeups = Wakeups()
    wakeups.wake(AGENT)  # not converged yet: its change handler comes first
    assert await wakeups.wait(AGENT, timeout=0.01) is False
    wakeups.depends(LLM, [])
    wakeups.depends(AGENT, [LLM])
    waiting = asyncio.ensure_future(wakeups.wait(AGENT, timeout=30))
    await asyncio.sleep(0)
    wakeups.wake(LLM, dependents=True)
    assert await asyncio.wait_for(waiting, 5) is True
    assert await wakeups.wait(AGENT, timeout=0.01) is False, "the flag is lowered once a pass has seen it"
    wakeups.depends(AGENT, [])  # it no longer names the ModelAPI
    wakeups.wake(LLM, dependents=True)
    assert await wakeups.wait(AGENT, timeout=0.01) is False


def test_resync_periods_spread_around_the_setting():
    assert resync_period(60, draw=lambda: 0.0) == 30 and resync_period(60, draw=lambda: 0.999) < 90


async def test_the_gate_bounds_helm_runs_and_serves_an_edit_before_first_installs():
    gate, order, running, peak = HelmGate(2), [], [0], [0]

    async def run(name: str, urgent: bool = False):
        async with gate.slot(urgent):
            running[0] += 1
            peak[0] = max(peak[0], running[0])
            order.append(name)
            await asyncio.sleep(0.01)
            running[0] -= 1

    first = [asyncio.ensure_future(run(f"new-{i}")) for i in range(6)]
    await asyncio.sleep(0)
    edit = asyncio.ensure_future(run("edit", urgent=True))
    await asyncio.gather(*first, edit)
    assert peak[0] == 2
    assert order.index("edit") == 2, order  # right after the two that held the slots


async def test_a_cancelled_waiter_gives_its_turn_away():
    gate = HelmGate(1)
    async with gate.slot():
        waiter = asyncio.ensure_future(gate.slot().__aenter__())
        await asyncio.sleep(0)
        waiter.cancel()
        await asyncio.gather(waiter, return_exceptions=True)
    async with gate.slot():  # the slot came back
        assert gate.waiting == 0

"""What paces the operator: when a resource's status pass runs, and how many helm processes run.

- ``Wakeups``: one flag per resource, raised by a watch event of the resource, of one of its
  dependencies or of its Deployment, and by a change handler's converge. The resource's status
  pass (its kopf timer, kaos.operator.handlers) waits for it, or for its resync period, drawn
  at random so that the resyncs of many resources spread in time. At rest nothing is raised:
  no pass runs but the resyncs.
- ``HelmGate``: at most ``limit`` helm processes at once; a waiter that changes a release this
  process has applied before goes ahead of first installs, so an edit is not queued behind a
  whole first sync.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import random
from collections import defaultdict
from contextlib import asynccontextmanager
from typing import AsyncIterator, Iterable

from kaos.reconcile import Ref


def resync_period(seconds: float, draw=random.random) -> float:
    """A resync period around ``seconds``: uniform in [0.5, 1.5) times it."""
    return seconds * (0.5 + draw())


class Wakeups:
    def __init__(self) -> None:
        self._flags: dict[Ref, asyncio.Event] = {}
        self._dependents: dict[Ref, set[Ref]] = defaultdict(set)
        self._needs: dict[Ref, frozenset[Ref]] = {}

    def _flag(self, ref: Ref) -> asyncio.Event:
        flag = self._flags.get(ref)
        if flag is None:
            flag = self._flags[ref] = asyncio.Event()
        return flag

    def depends(self, ref: Ref, dependencies: Iterable[Ref]) -> None:
        """Record what ``ref`` depends on now: an event of one of them wakes it."""
        needs = frozenset(dependencies)
        before = self._needs.get(ref, frozenset())
        self._needs[ref] = needs
        for gone in before - needs:
            self._dependents[gone].discard(ref)
        for new in needs - before:
            self._dependents[new].add(ref)

    def wake(self, ref: Ref, dependents: bool = False) -> None:
        """Raise the flag of ``ref`` (and of whatever depends on it), once it has been converged
        (``depends`` called): before that, the change handler's converge comes first and wakes it."""
        if ref in self._needs:
            self._flag(ref).set()
        if dependents:
            for dependent in self._dependents.get(ref, ()):
                self._flag(dependent).set()

    async def wait(self, ref: Ref, timeout: float, stopped=None) -> bool:
        """Until ``ref`` is woken (True), ``timeout`` passes or ``stopped`` (kopf's stopper) is set
        (False); the flag is lowered."""
        flag = self._flag(ref)
        if not flag.is_set():
            waits = [asyncio.ensure_future(flag.wait())]
            if stopped is not None:
                waits.append(asyncio.ensure_future(stopped.wait()))
            try:
                await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for waiting in waits:
                    waiting.cancel()
        woken = flag.is_set()
        flag.clear()
        return woken

    def forget(self, ref: Ref) -> None:
        self._flags.pop(ref, None)
        for dependency in self._needs.pop(ref, frozenset()):
            self._dependents[dependency].discard(ref)


class HelmGate:
    """A semaphore of ``limit`` slots whose waiters are served urgent first, then in order."""

    def __init__(self, limit: int) -> None:
        self._free = limit
        self._waiting: list[tuple[int, int, asyncio.Future]] = []
        self._order = itertools.count()

    @asynccontextmanager
    async def slot(self, urgent: bool = False) -> AsyncIterator[None]:
        if self._free > 0 and not self._waiting:
            self._free -= 1
        else:
            turn = asyncio.get_running_loop().create_future()
            heapq.heappush(self._waiting, (0 if urgent else 1, next(self._order), turn))
            try:
                await turn
            except asyncio.CancelledError:
                if turn.done() and not turn.cancelled():
                    self._release()  # handed a slot just as it was cancelled: pass it on
                raise
        try:
            yield
        finally:
            self._release()

    def _release(self) -> None:
        while self._waiting:
            turn = heapq.heappop(self._waiting)[2]
            if not turn.done():
                turn.set_result(None)
                return
        self._free += 1

    @property
    def waiting(self) -> int:
        return sum(1 for _, _, turn in self._waiting if not turn.done())

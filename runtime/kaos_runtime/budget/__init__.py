"""Token budgets, checked before each model call (``BUDGET_*``; see docs/runtime.md, "Budgets").

A budget is a number of tokens per fixed window (the current UTC minute, the current UTC day)
for one scope: the agent (every caller), each caller identity, and the ModelAPI the agent
uses. Before a model call every applicable window is checked; one that is spent refuses the
call with ``BudgetExceeded`` (HTTP 429 with ``Retry-After``: the seconds until that window
ends). After the call the tokens the model reported (``usage.total_tokens``) are added to
each window, so the call that crosses a limit completes and the next one is refused.

Counting is in process (``LocalCounts``: per replica) unless the agent's memory is on Redis,
then the counts live there (``RedisCounts``: one ``INCRBY`` per window key, expiring with the
window) and every replica, and every agent that shares the Redis for the same ModelAPI,
counts against the same numbers.

``BudgetedModel`` wraps the model client; ``Budget.enter`` names the request (session and
caller) for the model calls it makes and refuses it at once when a window is already spent (that
check stands for the request's first model call).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import math
import time
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any, Callable

from ..core.forwarding import Forwarding, StreamUsage
from ..core.principal import ANONYMOUS
from ..core.settings import BudgetSettings
from .counts import LocalCounts, RedisCounts

log = logging.getLogger("kaos_runtime.budget")

MINUTE, DAY = 60, 86400
CALLERS_KEPT = 1024  # callers whose limits (and keys) are kept ready; past it they are built again


class BudgetExceeded(Exception):
    """A spent budget: which one, its limit and what was used, and when it frees up."""

    def __init__(self, budget: str, window: str, limit: int, used: int, retry_after: int) -> None:
        self.budget, self.window, self.limit, self.used, self.retry_after = budget, window, limit, used, retry_after
        super().__init__(f"token budget exceeded: {budget} allows {limit} tokens per {window} and "
                         f"{used} were used; retry in {retry_after} s")

    def event(self) -> dict:
        return {"budget": self.budget, "window": self.window, "limit": self.limit, "used": self.used,
                "retry_after": self.retry_after}

    def body(self) -> dict:
        """An OpenAI-style error body (what its API answers for a rate limit)."""
        return {"error": {"message": str(self), "type": "budget_exceeded", "param": None,
                          "code": "budget_exceeded"}}


@dataclass(frozen=True)
class Limit:
    budget: str  # agent | caller | modelapi
    window: str  # minute | day
    seconds: int
    tokens: int
    key: str  # the count's key without the window number (a caller limit's: with {} for the caller)


@dataclass
class Scope:
    """The request the current model calls belong to."""

    session_id: str
    callers: tuple[str, ...]
    entered: bool = False  # enter() has just checked: that check stands for the first model call


_scope: contextvars.ContextVar[Scope | None] = contextvars.ContextVar("kaos_budget_scope", default=None)


class Budget:
    def __init__(self, settings: BudgetSettings, agent: str, counts=None, clock: Callable[[], float] = time.time,
                 on_reject: Callable[[str], None] | None = None, memory=None) -> None:
        self.settings = settings
        self.clock = clock
        self.on_reject = on_reject  # metrics: called with the budget's name
        self.memory = memory  # where a refusal is recorded (a budget_exceeded event)
        self.counts = counts or LocalCounts()
        self._agent_limits = [
            Limit("agent", "minute", MINUTE, settings.tokens_per_minute, f"agent:{agent}:m"),
            Limit("agent", "day", DAY, settings.tokens_per_day, f"agent:{agent}:d"),
        ]
        model_api = settings.model_api or "modelapi"
        self._agent_limits += [
            Limit("modelapi", "minute", MINUTE, settings.model_api_tokens_per_minute, f"modelapi:{model_api}:m"),
            Limit("modelapi", "day", DAY, settings.model_api_tokens_per_day, f"modelapi:{model_api}:d"),
        ]
        self._agent_limits = [limit for limit in self._agent_limits if limit.tokens]
        self._caller_limits = [limit for limit in (
            Limit("caller", "minute", MINUTE, settings.caller_tokens_per_minute, f"agent:{agent}:caller:{{}}:m"),
            Limit("caller", "day", DAY, settings.caller_tokens_per_day, f"agent:{agent}:caller:{{}}:d"),
        ) if limit.tokens]
        self.enabled = bool(self._agent_limits or self._caller_limits)
        self._by_caller: dict[tuple[str, ...], list[tuple[Limit, str]]] = {}

    def _limits(self, callers: tuple[str, ...]) -> list[tuple[Limit, str]]:
        """Each limit that applies to the callers with its count's key (built once per callers:
        this runs two or three times per request)."""
        limits = self._by_caller.get(callers)
        if limits is None:
            if len(self._by_caller) >= CALLERS_KEPT:
                self._by_caller.clear()
            limits = self._by_caller[callers] = (
                [(limit, limit.key) for limit in self._agent_limits]
                + [(limit, limit.key.format(caller)) for caller in callers for limit in self._caller_limits])
        return limits

    async def enter(self, session_id: str, callers: tuple[str, ...] | None) -> None:
        """Name the current request for its model calls (``callers``: ``core.auth.caller_of``); refuse it
        now if a window is spent."""
        if not self.enabled:
            return
        scope = Scope(session_id, tuple(callers or ()) or (ANONYMOUS,))
        _scope.set(scope)
        await self.check()
        scope.entered = True

    async def before_call(self) -> None:
        """Before a model call: ``check``, but for the request's first call, which ``enter`` has
        just checked (one check per call, and one Redis read fewer per request)."""
        if not self.enabled:
            return
        scope = _scope.get()
        if scope is not None and scope.entered:
            scope.entered = False
            return
        await self.check()

    async def check(self) -> None:
        if not self.enabled:
            return
        scope = _scope.get() or Scope("", (ANONYMOUS,))
        now = self.clock()
        limits = self._limits(scope.callers)
        used = await self.counts.used([(key, int(now // limit.seconds)) for limit, key in limits])
        for (limit, _), count in zip(limits, used):
            if count >= limit.tokens:
                retry = max(1, math.ceil(limit.seconds - now % limit.seconds))
                exceeded = BudgetExceeded(limit.budget, limit.window, limit.tokens, count, retry)
                if self.on_reject is not None:
                    self.on_reject(limit.budget)
                if self.memory is not None and scope.session_id:
                    await self.memory.record(scope.session_id, "budget_exceeded", str(exceeded), exceeded.event())
                raise exceeded

    async def spend(self, usage: dict[str, int] | None) -> None:
        tokens = int((usage or {}).get("total_tokens") or 0)
        if not self.enabled or tokens <= 0:
            return
        scope = _scope.get() or Scope("", (ANONYMOUS,))
        now = self.clock()
        try:
            await self.counts.add([(key, int(now // limit.seconds), limit.seconds)
                                   for limit, key in self._limits(scope.callers)], tokens)
        except Exception as error:  # a count that cannot be written must not fail the answer
            log.warning("cannot count %d tokens against the budget: %s", tokens, error)

    async def close(self) -> None:
        await self.counts.close()


class BudgetedModel(Forwarding):
    """A model client that checks the budget before each call and counts the reported usage."""

    def __init__(self, inner: Any, budget: Budget) -> None:
        super().__init__(inner)
        self._budget = budget

    async def complete(self, *args, **kwargs):
        await self._budget.before_call()
        reply = await self._inner.complete(*args, **kwargs)
        await self._budget.spend(reply.usage)
        return reply

    async def stream(self, *args, **kwargs):
        await self._budget.before_call()
        seen = StreamUsage(self._inner.stream, *args, **kwargs)
        try:
            async with aclosing(seen.deltas()) as deltas:
                async for delta in deltas:
                    yield delta
        finally:
            await asyncio.shield(self._budget.spend(seen.usage))


def create_budget(settings: BudgetSettings, agent: str, memory_settings, on_reject=None, memory=None) -> Budget:
    """In process, or in Redis when the agent's memory is there (MEMORY_BACKEND=redis)."""
    counts = None
    if memory_settings.backend == "redis" and any((settings.tokens_per_minute, settings.tokens_per_day,
                                                   settings.caller_tokens_per_minute, settings.caller_tokens_per_day,
                                                   settings.model_api_tokens_per_minute,
                                                   settings.model_api_tokens_per_day)):
        counts = RedisCounts(memory_settings.redis_url.get_secret_value().strip(), settings.key_prefix,
                             memory_settings.redis_timeout)
    return Budget(settings, agent, counts, on_reject=on_reject, memory=memory)

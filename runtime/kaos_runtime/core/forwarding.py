"""``Forwarding``: a wrapper that behaves as the object it wraps but for the methods its subclass
defines. The agent's collaborators are wrapped rather than edited: metrics count their calls
(core.metrics), the budget checks each model call (budget), and delegations carry the
agent's credential (core.auth). ``StreamUsage`` passes a wrapped model's stream on and keeps the
usage it reports, which the metrics and the budget both count."""

from __future__ import annotations

from contextlib import aclosing
from typing import Any, AsyncIterator, Callable


class Forwarding:
    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class StreamUsage:
    """``deltas()`` passes on the stream of ``stream(*args, **kwargs)`` (a model's, called at the
    first delta asked for); ``usage`` is the last usage it reported."""

    def __init__(self, stream: Callable[..., AsyncIterator], *args, **kwargs) -> None:
        self._open = lambda: stream(*args, **kwargs)
        self.usage: dict[str, int] | None = None

    async def deltas(self) -> AsyncIterator:
        async with aclosing(self._open()) as deltas:
            async for delta in deltas:
                if delta.usage:
                    self.usage = delta.usage
                yield delta

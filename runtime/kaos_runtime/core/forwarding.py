"""``Forwarding``: a wrapper that behaves as the object it wraps but for the methods its subclass
defines. The agent's collaborators are wrapped rather than edited: metrics count their calls
(core.metrics), the budget checks each model call (budget), and delegations carry the
agent's credential (core.auth)."""

from __future__ import annotations

from typing import Any


class Forwarding:
    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

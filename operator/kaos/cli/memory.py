"""`kaos memory`: an agent's long-term memories (its MemoryStore) through the gateway of `kaos up`.

The agent answers ``GET /memory/long-term`` (``limit``, ``offset``; with ``q`` the memories
nearest to it), ``DELETE /memory/long-term/{id}`` and ``DELETE /memory/long-term`` (all). With
scope ``user`` it shows and forgets only the caller's own: the principal of the bearer token the
CLI sends (``--token``), anonymous without one (docs/memory-store.md).
"""

from __future__ import annotations

from datetime import datetime, timezone

import httpx

from kaos.cli.client import ControlPlaneError, answer_detail
from kaos.cli.display import aligned
from kaos.routes import gateway_path

TEXT_SHOWN_MAX = 100


class MemoryError(ControlPlaneError):
    """A listing or a forgetting that did not happen; the message says why, for the user."""


class AgentMemory:
    """The long-term memory endpoints of one agent behind the gateway."""

    def __init__(self, gateway: str, namespace: str, agent: str, token: str | None = None, timeout: float = 30.0):
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.agent = f"{namespace}/{agent}"
        self.url = gateway.rstrip("/") + gateway_path(namespace, "Agent", agent) + "/memory/long-term"
        self.http = httpx.Client(headers=headers, timeout=httpx.Timeout(timeout, connect=5.0))

    def close(self) -> None:
        self.http.close()

    def list(self, limit: int | None = None, offset: int = 0) -> dict:
        params = {"offset": str(offset), **({"limit": str(limit)} if limit else {})}
        return self._answer(self.http.get(self.url, params=params))

    def search(self, query: str, limit: int | None = None) -> dict:
        params = {"q": query, **({"limit": str(limit)} if limit else {})}
        return self._answer(self.http.get(self.url, params=params))

    def forget(self, memory_id: str | None) -> dict:
        """Forget one memory, or every one of the caller's (``memory_id`` None). The agent refuses
        a write that is not JSON (415), a DELETE without a body included, so it says it is."""
        url = f"{self.url}/{memory_id}" if memory_id else self.url
        return self._answer(self.http.delete(url, headers={"content-type": "application/json"}))

    def _answer(self, response: httpx.Response) -> dict:
        if response.status_code == 200:
            return response.json()
        detail = answer_detail(response)
        if response.status_code == 404 and not detail.startswith("no memory "):
            raise MemoryError(f"agent {self.agent} answered 404: {detail} (no such agent, or one without "
                              "long-term memory: it has none unless its spec.memory.store names a MemoryStore)")
        if response.status_code in (401, 403):
            raise MemoryError(f"agent {self.agent} refused ({response.status_code}): {detail}; "
                              "sign in with `kaos login` or pass a token of a principal it accepts with --token")
        raise MemoryError(f"agent {self.agent} answered {response.status_code}: {detail}")


def table(memories: list[dict], searched: bool = False) -> str:
    """One memory a line: id, when, (how near, for a search), session, the text (cut)."""
    if not memories:
        return "no memories"
    header = ["ID", "CREATED", *(["DISTANCE"] if searched else []), "SESSION", "TEXT"]
    rows = [header]
    for memory in memories:
        rows.append([
            str(memory.get("id", "")),
            _when(memory.get("created_at")),
            *([f"{float(memory.get('distance', 0.0)):.3f}"] if searched else []),
            str(memory.get("session_id") or "-"),
            _cut(str(memory.get("text", ""))),
        ])
    return aligned(rows)


def _when(created_at) -> str:
    try:
        return datetime.fromtimestamp(float(created_at), timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    except (TypeError, ValueError, OverflowError, OSError):
        return "-"


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= TEXT_SHOWN_MAX else text[:TEXT_SHOWN_MAX - 3] + "..."

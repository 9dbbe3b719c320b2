"""`kaos memory`: an agent's long-term memories (its MemoryStore) through the gateway of `kaos up`.

The agent answers ``GET /memory/long-term`` (``limit``, ``offset``; with ``q`` the memories
nearest to it), ``DELETE /memory/long-term/{id}`` and ``DELETE /memory/long-term`` (all). With
scope ``user`` it shows and forgets only the caller's own: the principal of the bearer token the
CLI sends (``--token``), anonymous without one (docs/memory-store.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime, timezone

import httpx

from kaos.api import AGENT
from kaos.cli.client import ControlPlaneError, answer_detail
from kaos.cli.context import UsageError, check_names, gateway_url, positive, token
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


# The commands: `kaos memory list|search|forget`.


def _agent_memory(args) -> AgentMemory:
    check_names(AGENT, args.namespace, args.agent)
    return AgentMemory(gateway_url(), args.namespace, args.agent, token=token(args))


def cmd_memory_list(args) -> int:
    memory = _agent_memory(args)
    try:
        answer = memory.search(args.query, args.limit) if getattr(args, "query", None) else memory.list(args.limit)
    finally:
        memory.close()
    if args.output == "json":
        print(json.dumps(answer, indent=2))
        return 0
    print(table(answer.get("memories") or [], searched=bool(getattr(args, "query", None))))
    shown, total = len(answer.get("memories") or []), answer.get("total", 0)
    if not getattr(args, "query", None) and total > shown:
        print(f"({shown} of {total}; --limit to see more)", file=sys.stderr)
    return 0


def cmd_memory_forget(args) -> int:
    if bool(args.id) == bool(args.all):
        raise UsageError("kaos memory forget: give either a memory id (from `kaos memory list`) or --all")
    memory = _agent_memory(args)
    try:
        answer = memory.forget(None if args.all else args.id)
    finally:
        memory.close()
    deleted = answer.get("deleted")
    count = len(deleted) if isinstance(deleted, list) else int(deleted or 0)
    print(f"agent {args.namespace}/{args.agent}: forgot {count} {'memory' if count == 1 else 'memories'}")
    return 0


MEMORY_HELP = """An agent's long-term memories (the MemoryStore its spec.memory.store names; docs/memory-store.md),
through the gateway of `kaos up`. With the store's scope user an agent shows and forgets only the
caller's own memories: those of the principal of --token (or of `kaos login`), or the anonymous caller's without one."""


def add_parser(commands) -> None:
    group = commands.add_parser("memory", help="list, search or forget an agent's long-term memories",
                                description=MEMORY_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = group.add_subparsers(dest="action", required=True)

    def common(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("agent")
        parser.add_argument("-n", "--namespace", default="default")
        parser.add_argument("--token", help="bearer token for agents with spec.auth (whose memories; default: that of `kaos login`)")

    listing = actions.add_parser("list", help="the memories, newest first", description=MEMORY_HELP,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    search = actions.add_parser("search", help="the memories nearest to a text, nearest first",
                                description=MEMORY_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    for parser, what in ((listing, "at most this many (the agent's default: 100)"),
                         (search, "at most this many (the store's topK by default)")):
        common(parser)
        parser.add_argument("--limit", type=positive, help=what)
        parser.add_argument("-o", "--output", choices=["table", "json"], default="table")
        parser.set_defaults(run=cmd_memory_list)
    search.add_argument("query", help="what to look for")
    forget = actions.add_parser("forget", help="forget one memory (its id) or --all of them",
                                description=MEMORY_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    common(forget)
    forget.add_argument("id", nargs="?", help="the memory id (from `kaos memory list`)")
    forget.add_argument("--all", action="store_true", help="every memory the caller may forget")
    forget.set_defaults(run=cmd_memory_forget)



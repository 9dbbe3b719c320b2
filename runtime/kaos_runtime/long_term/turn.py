"""Long-term memory around each run of the agentic loop, and the model's two memory tools.

``RememberingAgent`` wraps the Agent (it edits nothing of the loop): before a run it recalls the
caller's memories nearest to what they said and gives them to the model as a system message
ahead of the request's messages (a ``memory_recalled`` event says which); after it, in the
background, it extracts the turn's durable facts and stores them (``memory_stored``).
``MemoryTools`` adds ``remember`` and ``recall`` to the agent's tools; they act for the owner
the run acts for (a context variable the wrapper sets, which the run's tool calls inherit).
"""

from __future__ import annotations

import contextvars
import dataclasses
import logging
from typing import Any

from ..clients.mcp_client import ToolError
from ..core.forwarding import Forwarding
from .records import recalled_message
from .service import LongTermMemory, LongTermUnavailable

log = logging.getLogger("kaos_runtime.long_term")

TOOL_SERVER = "kaos-long-term-memory"  # what ``info`` names as the tools' server (approval rules, metrics)
REMEMBER, RECALL = "remember", "recall"
MEMORY_TOOLS = [
    {"name": REMEMBER,
     "description": "Store a durable fact about the user (a preference, a detail of their life or work, "
                    "something they asked you to remember) in long-term memory, for later conversations.",
     "inputSchema": {"type": "object", "properties": {"fact": {"type": "string", "description": "The fact, "
                     "one short sentence"}}, "required": ["fact"]}},
    {"name": RECALL,
     "description": "Search long-term memory for what you know about the user from earlier conversations.",
     "inputSchema": {"type": "object", "properties": {"query": {"type": "string", "description": "What to "
                     "look for"}}, "required": ["query"]}},
]
# (owner, session) of the run in progress; None outside a run (a resumed run): the tools refuse.
_ACTING: contextvars.ContextVar[tuple[str, str] | None] = contextvars.ContextVar("kaos_long_term", default=None)


def said(messages: list[dict]) -> str:
    """What the caller said in this request: the delegated task, else the last user message."""
    for role in ("task-delegation", "user"):
        for message in reversed(messages):
            if message["role"] == role:
                return str(message["content"])
    return ""


class RememberingAgent(Forwarding):
    def __init__(self, inner: Any, long_term: LongTermMemory, memory: Any) -> None:
        super().__init__(inner)
        self.long_term = long_term
        self.memory = memory  # the session's events

    async def run(self, request, sink=None, watcher=None):
        owner, session = self.long_term.owner(request.caller), request.session_id
        text = said(request.messages)
        hits = await self.long_term.recall(owner, text)
        message = recalled_message(hits)
        if message is not None:
            await self.memory.record(session, "memory_recalled",
                                     {"memories": [hit.public() for hit in hits]}, {"count": len(hits)})
            request = dataclasses.replace(request, messages=[message, *request.messages])
        token = _ACTING.set((owner, session))
        try:
            answer = await self._inner.run(request, sink, watcher=watcher)
        finally:
            _ACTING.reset(token)
        if text and not answer.stopped:
            self.long_term.in_background(self._learn(owner, session, text, answer.content))
        return answer

    async def _learn(self, owner: str, session: str, text: str, answer: str) -> None:
        stored = await self.long_term.learn(owner, session, text, answer)
        if stored:
            await self.memory.record(session, "memory_stored",
                                     {"memories": [record.public() for record in stored]},
                                     {"count": len(stored), "source": "extraction"})


class MemoryTools(Forwarding):
    """The agent's tool catalog with ``remember`` and ``recall`` beside the MCP servers' tools."""

    def __init__(self, inner: Any, long_term: LongTermMemory, memory: Any) -> None:
        super().__init__(inner)
        self.long_term = long_term
        self.memory = memory

    def skills(self) -> list[dict]:
        theirs = [tool for tool in self._inner.skills() if tool["name"] not in (REMEMBER, RECALL)]
        return theirs + [dict(tool) for tool in MEMORY_TOOLS]

    def info(self, tool: str) -> tuple[str | None, dict | None]:
        if tool in (REMEMBER, RECALL):
            return TOOL_SERVER, {"readOnlyHint": tool == RECALL}
        return self._inner.info(tool)

    async def call(self, tool: str, arguments: dict) -> str:
        if tool not in (REMEMBER, RECALL):
            return await self._inner.call(tool, arguments)
        acting = _ACTING.get()
        key = "fact" if tool == REMEMBER else "query"
        value = arguments.get(key)
        if not isinstance(value, str) or not value.strip():
            raise ToolError(f"{tool} needs a non-empty string {key!r}")
        if acting is None:
            raise ToolError(f"{tool}: this run acts for no known caller (a resumed run); not available")
        owner, session = acting
        try:
            if tool == RECALL:
                hits = await self.long_term.search(owner, value, self.long_term.top_k)
                if hits:
                    await self.memory.record(session, "memory_recalled", {"memories": [h.public() for h in hits]},
                                             {"count": len(hits), "tool": True})
                return "\n".join(f"- {hit.record.text}" for hit in hits) or "Nothing remembered about that."
            stored = await self.long_term.remember(owner, value, session, "tool")
        except LongTermUnavailable as error:
            raise ToolError(f"long-term memory is unavailable: {error}") from None
        if stored:
            await self.memory.record(session, "memory_stored", {"memories": [r.public() for r in stored]},
                                     {"count": len(stored), "source": "tool"})
        return "Remembered." if stored else "Already remembered."

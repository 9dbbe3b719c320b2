"""Compaction: the older part of a long session summarized by a model, recorded as an event.

When a session's history (its summary and the turns no summary replaces) passes
``MEMORY_COMPACTION_THRESHOLD_PERCENT`` of the model's input budget, the oldest turns (all but
the newest whole turns that fit in half the threshold, and no more than the summarizer can read)
are summarized together with the previous summary. The summary is recorded as a
``context_compacted`` event whose ``metadata.replaces`` lists the ids of the events it stands for;
those events stay in memory (the audit trail). It runs under the session's ``compaction`` lock
(Redis SET NX with an expiry across replicas): a run that finds it taken goes on with the history
as it is, which ``fit`` trims.

The summarizer is ``MEMORY_COMPACTION_MODEL`` (else the agent's own model) on the agent's
ModelAPI. Under ``DEBUG_MOCK_RESPONSES`` no model is asked: the summary is extractive (the
previous summary, then each turn's first ``EXTRACT_CHARS`` characters), so it is deterministic.
"""

from __future__ import annotations

import logging

from ..clients.model import ModelClient, ModelError
from ..memory import COMPACTED, Memory
from .fit import cut
from .history import History, Turn, history_of, to_compact
from .tokens import Tokens

log = logging.getLogger("kaos_runtime.context")

LOCK = "compaction"
LOCK_SECONDS = 300
EXTRACT_CHARS = 200
INSTRUCTIONS = (
    "You condense a conversation between a user and an AI agent so that the agent can go on "
    "without it. Keep every fact, name, number, decision, request and open question; drop "
    "pleasantries. Write at most {words} words of plain text, no preamble.")


def transcript(summary: str, turns: list[Turn]) -> str:
    lines = [f"Summary so far:\n{summary}\n"] if summary else []
    lines += [f"{turn.message['role']}: {turn.message['content']}" for turn in turns]
    return "\n".join(lines)


def extractive_summary(summary: str, turns: list[Turn]) -> str:
    """The deterministic summary (no model): the previous one and each turn's start."""
    lines = [summary] if summary else []
    lines += [f"{turn.message['role']}: {turn.message['content'][:EXTRACT_CHARS]}" for turn in turns]
    return "\n".join(lines)


class Compactor:
    def __init__(self, memory: Memory, summarizer: ModelClient | None, threshold_percent: int) -> None:
        self.memory = memory
        self.summarizer = summarizer  # None: the extractive summary
        self.threshold_percent = threshold_percent

    async def compacted(self, session_id: str, history: History, budget: int, tokens: Tokens) -> History:
        """The history, compacted first when it passes the threshold (and the lock is free)."""
        threshold = budget * self.threshold_percent // 100
        if history.tokens(tokens) <= threshold:
            return history
        # The summarizer reads at most half the budget; the summary is at most an eighth of it.
        turns = to_compact(history, threshold, budget // 2, tokens)
        if not turns:
            return history
        token = await self.memory.lock(session_id, LOCK, LOCK_SECONDS)
        if token is None:
            return history
        try:
            history = history_of(await self.memory.context_events(session_id))  # as it is now, under the lock
            turns = to_compact(history, threshold, budget // 2, tokens)
            if not turns:
                return history
            summary = await self._summary(history.summary, turns, max(64, budget // 8), tokens)
            if summary is None:
                return history
            replaces = [turn.event_id for turn in turns] + ([history.summary_id] if history.summary_id else [])
            await self.memory.record(session_id, COMPACTED, summary,
                                     {"replaces": replaces, "turns": len(turns), "tokens": tokens.count(summary)})
            log.info("session %s: %d turns compacted into a summary of %d tokens", session_id, len(turns),
                     tokens.count(summary))
            return history_of(await self.memory.context_events(session_id))
        finally:
            await self.memory.unlock(session_id, LOCK, token)

    async def _summary(self, previous: str, turns: list[Turn], most: int, tokens: Tokens) -> str | None:
        if self.summarizer is None:
            text = extractive_summary(previous, turns)
        else:
            messages = [{"role": "system", "content": INSTRUCTIONS.format(words=most * 2 // 3)},
                        {"role": "user", "content": transcript(previous, turns)}]
            try:
                text = (await self.summarizer.complete(messages)).content.strip()
            except ModelError as error:
                log.warning("compaction: the summarizer failed (%s); the history is trimmed instead", error)
                return None
            if not text:
                return None
        if tokens.count(text) > most:
            text = cut({"content": text}, most, tokens)["content"]
        return text

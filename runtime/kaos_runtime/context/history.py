"""A session's history as the model gets it, and what a compaction would replace (pure).

The memory keeps every event; a ``context_compacted`` event holds a summary and, in
``metadata.replaces``, the ids of the turn events (and the earlier summary) it stands for.
The history is the latest summary (a system message marked ``fit.SUMMARY``, which ``fit``
puts into the system prompt) followed by the turns no summary replaces.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..memory import COMPACTED, TURN_ROLES
from .fit import SUMMARY
from .tokens import Tokens


@dataclass(frozen=True)
class Turn:
    event_id: str
    message: dict


@dataclass(frozen=True)
class History:
    summary: str = ""
    summary_id: str = ""  # the context_compacted event of the summary
    turns: list[Turn] = field(default_factory=list)

    def messages(self) -> list[dict]:
        head = [{"role": "system", "content": self.summary, SUMMARY: True}] if self.summary else []
        return head + [turn.message for turn in self.turns]

    def tokens(self, tokens: Tokens) -> int:
        return (tokens.count(self.summary) if self.summary else 0) + sum(tokens.message(t.message) for t in self.turns)


def history_of(events: list[dict]) -> History:
    """The history of a session's context events (turns and summaries, oldest first)."""
    replaced: set[str] = set()
    summary = None
    for event in events:
        if event["event_type"] == COMPACTED:
            replaced.update((event.get("metadata") or {}).get("replaces") or ())
            summary = event
    turns = [Turn(event["event_id"], {"role": TURN_ROLES[event["event_type"]], "content": str(event["content"])})
             for event in events if event["event_type"] in TURN_ROLES and event["event_id"] not in replaced]
    if summary is None:
        return History(turns=turns)
    return History(str(summary["content"]), summary["event_id"], turns)


def to_compact(history: History, threshold: int, most: int, tokens: Tokens) -> list[Turn]:
    """The oldest turns to summarize once the history costs more than ``threshold`` tokens: all
    but the newest whole turns that fit in half of it, and at most ``most`` tokens of them (the
    rest waits for a later compaction); none when it is within the threshold."""
    if history.tokens(tokens) <= threshold:
        return []
    keep, kept = threshold // 2, 0
    start = len(history.turns)
    for index in range(len(history.turns) - 1, -1, -1):
        kept += tokens.message(history.turns[index].message)
        if kept > keep:
            break
        if history.turns[index].message["role"] == "user":
            start = index  # a turn starts at a user message
    chosen, cost = [], tokens.count(history.summary) if history.summary else 0
    for turn in history.turns[:start]:
        cost += tokens.message(turn.message)
        if cost > most and chosen:
            break
        chosen.append(turn)
    while chosen and chosen[-1].message["role"] == "user":
        chosen.pop()  # a turn is summarized whole: never its question without its answer
    return chosen

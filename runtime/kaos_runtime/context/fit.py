"""What the model sees of a run, within a token budget (pure).

``fit(messages, steps_from, budget, tokens)``: ``messages[0]`` is the system prompt; a
compaction's summary right after it (a system message marked ``SUMMARY``) goes into it; then come the
history, the current turn (from its last user message before ``steps_from``) and, from
``steps_from`` on, what the run's steps added (the model's replies and the results of its tool
calls and delegations: ``tool`` messages, or ``user`` messages with fenced blocks).

1. The system prompt and the current turn always go. A step's result longer than a quarter of
   the budget is cut to that, with a visible marker (its full text stays in memory); when the
   turn still does not fit, results are cut further, oldest first, down to ``MIN_KEPT`` tokens,
   and then the longest messages of the turn.
2. History fills what is left, newest first, whole turns at a time (a turn starts at a user
   message, so an assistant's tool calls and their results are never separated); the first turn
   that does not fit ends it: the older ones are left out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from .tokens import PER_MESSAGE, PER_REQUEST, Tokens

MIN_KEPT = 64
MARKER = ("\n[... {left} of {total} tokens cut here to fit the model's context window; "
          "the full text is kept in the session's memory]")
SUMMARY_HEADING = "Summary of the earlier conversation (compacted):\n"
SUMMARY = "kaos_summary"  # marks the history's summary message (never sent as such)
RESULT_ROLES = ("tool", "user")


@dataclass(frozen=True)
class Fitted:
    messages: list[dict]
    tokens: int  # what the counter says the messages cost, with the request's overhead
    dropped: int  # history messages left out
    cut: int  # messages cut


def cut(message: dict, limit: int, tokens: Tokens) -> dict:
    """The message with its text cut so that it costs at most ``limit`` tokens (marker included)."""
    text = message.get("content")
    if not isinstance(text, str):
        return message
    total = tokens.count(text)
    keep = max(0, limit - PER_MESSAGE - tokens.count(MARKER.format(left=total, total=total)))
    for _ in range(3):  # a cut may count a token or two more once re-encoded
        head = tokens.head(text, keep)
        shorter = {**message, "content": head + MARKER.format(left=total - tokens.count(head), total=total)}
        if tokens.message(shorter) <= limit or keep == 0:
            return shorter
        keep = max(0, keep - (tokens.message(shorter) - limit))
    return shorter


def texts_of(messages: list[dict]) -> list[str]:
    """The texts a counter is asked about for these messages (their contents and tool calls)."""
    texts = []
    for message in messages:
        if isinstance(message.get("content"), str):
            texts.append(message["content"])
        if message.get("tool_calls"):
            texts.append(json.dumps(message["tool_calls"], separators=(",", ":")))
    return texts


def current_turn_start(messages: list[dict], steps_from: int) -> int:
    """The index of the current turn's user message (the last one before the steps)."""
    for index in range(min(steps_from, len(messages)) - 1, 0, -1):
        if messages[index]["role"] == "user":
            return index
    return min(steps_from, len(messages))


def turns_of(messages: list[dict]) -> list[list[dict]]:
    """History split into turns: each starts at a user message."""
    turns: list[list[dict]] = []
    for message in messages:
        if message["role"] == "user" or not turns:
            turns.append([message])
        else:
            turns[-1].append(message)
    return turns


def fit(messages: list[dict], steps_from: int, budget: int, tokens: Tokens) -> Fitted:
    """The messages to send, within ``budget`` tokens (see the module's docstring)."""
    pinned = 1
    while pinned < len(messages) and messages[pinned].get(SUMMARY):
        pinned += 1
    system = messages[0]
    if pinned > 1:
        summary = "\n\n".join(str(message["content"]) for message in messages[1:pinned])
        system = {**system, "content": f"{system.get('content') or ''}\n\n{SUMMARY_HEADING}{summary}"}
    start = max(current_turn_start(messages, steps_from), pinned)
    current = list(messages[start:])
    costs = [tokens.message(message) for message in current]
    room = budget - PER_REQUEST - tokens.message(system)
    results = [index for index, message in enumerate(current)
               if start + index >= steps_from and message["role"] in RESULT_ROLES]
    cut_count = 0

    def shrink(index: int, limit: int) -> None:
        nonlocal cut_count
        if costs[index] > limit and isinstance(current[index].get("content"), str):
            current[index] = cut(current[index], limit, tokens)
            costs[index] = tokens.message(current[index])
            cut_count += 1

    for index in results:
        shrink(index, max(MIN_KEPT, room // 4))
    for index in results:  # oldest first
        over = sum(costs) - room
        if over <= 0:
            break
        shrink(index, max(MIN_KEPT, costs[index] - over))
    while sum(costs) > room:  # the longest messages of the turn (the request itself)
        index = max(range(len(current)), key=costs.__getitem__)
        before = costs[index]
        shrink(index, max(MIN_KEPT, before - (sum(costs) - room)))
        if costs[index] >= before:
            break  # nothing more to cut: the system prompt alone is over the budget
    left = room - sum(costs)
    kept: list[dict] = []
    history = messages[pinned:start]
    for turn in reversed(turns_of(history)):
        cost = sum(map(tokens.message, turn))
        if cost > left:
            break
        left -= cost
        kept[:0] = turn
    sent = [system, *kept, *current]
    return Fitted(sent, budget - left, len(history) - len(kept), cut_count)

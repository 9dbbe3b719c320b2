"""Approvals over A2A: a task whose run waits for a decision is ``input-required``.

The SDK runs one ``execute`` per task at a time, so a run cannot wait inside the execute that
started it: the decision (a message to the same task) would queue behind it. ``TaskRun`` is
the run of one task, in a task of its own: while a call waits for an approval it sets the
task ``input-required`` (the status message names the call, as text and as a data part) and
the execute returns; the run goes on and writes the rest of the task (the answer, completed
or failed) to the task's queue when it ends, whoever decided: a message to the task, read by
``decision_of``, or ``POST /approvals/{id}``.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import Any

from ..approvals import DECISIONS, Approval

WORDS = {"approve": "approve", "approved": "approve", "yes": "approve",
         "reject": "reject", "rejected": "reject", "no": "reject"}


@dataclass(frozen=True)
class TaskDecision:
    decision: str  # approve | reject
    reason: str = ""
    approval_id: str | None = None


def decision_of(text: str, data: list[Any]) -> TaskDecision | None:
    """What a message to an ``input-required`` task decides: a data part (or a JSON text)
    ``{"decision", "reason"?, "approval_id"?}``, or text starting with approve/reject (the rest is
    the reason); None when it decides nothing."""
    candidates = list(data)
    try:
        candidates.append(json.loads(text))
    except ValueError:
        pass
    for item in candidates:
        if isinstance(item, dict) and isinstance(item.get("decision"), str) and item["decision"] in DECISIONS:
            reason = item.get("reason")
            approval_id = item.get("approval_id")
            return TaskDecision(item["decision"], reason if isinstance(reason, str) else "",
                                approval_id if isinstance(approval_id, str) else None)
    word, _, rest = text.strip().partition(" ")
    decision = WORDS.get(word.strip().rstrip(":,.").lower())
    if decision is None:
        return None
    return TaskDecision(decision, rest.strip().lstrip(":-").strip())


def waiting_text(approvals: list[Approval]) -> str:
    calls = "; ".join(f"{a.tool} {json.dumps(a.arguments)} (approval {a.id})" for a in approvals)
    return (f"Waiting for approval: {calls}. Reply to this task with approve or reject (and a reason), "
            "or POST /approvals/<id>.")


class TaskRun:
    """The loop run of one A2A task (see the module docstring); it is the run's approval watcher."""

    def __init__(self, updater, message_of) -> None:
        self.updater = updater
        self.message_of = message_of  # (text, data) -> an agent Message of this task
        self.waiting: dict[str, Approval] = {}
        self._stop = asyncio.Event()  # a call waits: the attached execute may return
        self.task: asyncio.Task | None = None

    def start(self, work) -> None:
        self.task = asyncio.ensure_future(work)

    @property
    def running(self) -> bool:
        return self.task is not None and not self.task.done()

    async def approval_pending(self, approval: Approval) -> None:
        self.waiting[approval.id] = approval
        await self.announce()
        self._stop.set()

    async def approval_settled(self, approval: Approval) -> None:
        if self.waiting.pop(approval.id, None) is not None and not self.waiting:
            await self.updater.start_work()

    async def announce(self) -> None:
        waiting = list(self.waiting.values())
        now = time.time()
        await self.updater.requires_input(self.message_of(waiting_text(waiting),
                                                          {"approvals": [a.view(now) for a in waiting]}))

    def next_pending(self, approval_id: str | None) -> Approval | None:
        if approval_id is not None:
            return self.waiting.get(approval_id)
        return next(iter(self.waiting.values()), None)

    def decided(self, approval_id: str) -> None:
        """A decision this task's execute took: no longer waiting, whenever the run hears it."""
        self.waiting.pop(approval_id, None)

    async def until_stop(self) -> None:
        """Until the run ends, or a call waits (at once if one still does)."""
        if self.waiting:
            await self.announce()
            return
        self._stop.clear()
        stop = asyncio.ensure_future(self._stop.wait())
        try:
            await asyncio.wait((self.task, stop), return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:  # the execute was cancelled (the task is): so is the run
            self.task.cancel()
            raise
        finally:
            stop.cancel()

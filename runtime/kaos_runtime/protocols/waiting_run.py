"""A run that outlives the request that started it while one of its calls waits for a decision.

A2A and MCP (with a client that answers elicitations) end a request when a call waits and take
the decision in a later request (a message to the same A2A task; the MCP client's retry of the
tool call): the first request cannot simply wait, since over A2A the SDK runs one request of a
task at a time (the decision would queue behind it) and over MCP the retry is a new request.
``WaitingRun`` runs the loop in a task of its own and is the run's approval watcher: a request
attaches with ``until_stop`` and returns when the run ends or a call waits (``waiting``); a
decision taken meanwhile, by that protocol (``decision_of`` reads one from a message) or
through ``POST /approvals/{id}``, lets the run go on. ``on_pending`` is what the protocol does
when a call starts waiting (an A2A task goes ``input-required``); it hears, with the waiting
calls, why the last decision was refused (the rules of core/principal.py), if it was.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from ..approvals import DECISIONS, AlreadySettled, Approval, NotAllowed, UnknownApproval
from ..core.principal import Principal

log = logging.getLogger("kaos_runtime.approvals")

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


def waiting_text(approvals: list[Approval], how: str) -> str:
    calls = "; ".join(f"{a.tool} {json.dumps(a.arguments)} (approval {a.id})" for a in approvals)
    return f"Waiting for approval: {calls}. {how}"


class WaitingRun:
    """The loop run of one A2A task or MCP call (see the module docstring)."""

    def __init__(self, on_pending: Callable[[list[Approval], str], Awaitable[None]] | None = None,
                 on_resumed: Callable[[], Awaitable[None]] | None = None) -> None:
        self.on_pending = on_pending
        self.on_resumed = on_resumed
        self.waiting: dict[str, Approval] = {}
        self.refused = ""  # why the last decision brought was refused
        self._stop = asyncio.Event()  # a call waits: the attached request may return
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
        if self.waiting.pop(approval.id, None) is not None and not self.waiting and self.on_resumed is not None:
            await self.on_resumed()

    async def announce(self) -> None:
        refused, self.refused = self.refused, ""
        if self.on_pending is not None:
            await self.on_pending(list(self.waiting.values()), refused)

    def next_pending(self, approval_id: str | None) -> Approval | None:
        if approval_id is not None:
            return self.waiting.get(approval_id)
        return next(iter(self.waiting.values()), None)

    async def apply(self, gate, decision: TaskDecision | None, by: Principal) -> None:
        """A decision the attached request brings, on the call it names or the oldest waiting one;
        nothing to decide (or decided already): the run goes on waiting, if it does; refused by
        the rules: it goes on waiting, and ``refused`` says why."""
        approval = self.next_pending(decision.approval_id if decision else None)
        if decision is None or approval is None:
            return
        self.waiting.pop(approval.id, None)  # no longer waiting, whenever the run hears it
        try:
            await gate.decide(approval.id, decision.decision, by, decision.reason)
        except NotAllowed as refused:
            self.waiting[approval.id] = approval  # still waiting
            self.refused = str(refused)
        except (AlreadySettled, UnknownApproval) as error:
            log.info("%s", error)

    async def until_stop(self) -> None:
        """Until the run ends, or a call waits (at once if one still does)."""
        if self.waiting:
            await self.announce()
            return
        self._stop.clear()
        stop = asyncio.ensure_future(self._stop.wait())
        try:
            await asyncio.wait((self.task, stop), return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:  # the request was cancelled (the A2A task is): so is the run
            self.task.cancel()
            raise
        finally:
            stop.cancel()

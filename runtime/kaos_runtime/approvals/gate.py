"""``ApprovalGate``: the one question the loop asks, "may this call run?", and the decisions.

``admit`` records the approval (and the ``approval_requested`` event), tells the request's
watcher (a stream announces it, an A2A task goes ``input-required``), waits until a person
decides, the timeout passes (``TOOL_APPROVAL_ON_TIMEOUT``) or the process stops, and answers
with a ``Verdict``. ``decide`` is what ``POST /approvals/{id}`` does. Whoever changes an
approval's state records its event (``approval_granted``, ``approval_rejected``,
``approval_expired``) in the session and counts it in the metrics. Who may see and decide
which approval is the agent's ``Access`` (core/principal.py): ``visible`` lists what a principal
may see, ``decide`` refuses (``NotAllowed``) whom the rules refuse, whichever way the decision comes
(``POST /approvals/{id}``, an A2A message, an MCP elicitation).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Callable, Protocol

from ..core.audit import AuditTrail
from ..core.principal import Access, Principal
from .policy import ApprovalPolicy
from .record import (
    APPROVED,
    DECISIONS,
    EVENTS,
    EXPIRED,
    PENDING,
    REJECTED,
    REQUESTED_EVENT,
    Approval,
    approval_id,
)
from .store import AlreadySettled, ApprovalStore, UnknownApproval

log = logging.getLogger("kaos_runtime.approvals")

TIMED_OUT = "no decision within"  # how the reason of an expiry by the timeout begins


class ApprovalWatcher(Protocol):
    """What a protocol does while a call of its request waits (all optional to act on)."""

    async def approval_pending(self, approval: Approval) -> None: ...

    async def approval_settled(self, approval: Approval) -> None: ...


class ApprovalInterrupted(Exception):
    """The agent process stops while a call waits for a decision; the message says what becomes of it."""


class NotAllowed(Exception):
    """The rules refuse this principal (HTTP 403); the message says why, naming the missing grant."""


@dataclass(frozen=True)
class Where:
    """The call that asks: its run, step and place among the step's actions, its session and caller."""

    run_id: str
    step: int
    index: int
    session_id: str
    requester: str
    resumed: bool = False
    watcher: ApprovalWatcher | None = None


@dataclass(frozen=True)
class Verdict:
    run: bool
    reason: str = ""
    approval: Approval | None = None


ALLOWED = Verdict(True)


class ApprovalGate:
    def __init__(self, policy: ApprovalPolicy, store: ApprovalStore, memory, agent: str,
                 tool_info: Callable[[str], tuple[str | None, dict | None]] = lambda tool: (None, None),
                 on_settled: Callable[[str, float], None] | None = None, clock=time.time,
                 access: Access = Access(), audit: AuditTrail | None = None) -> None:
        self.policy = policy
        self.access = access
        self.audit = audit
        self.store = store
        self.memory = memory
        self.agent = agent
        self.tool_info = tool_info  # tool -> (its MCP server, its annotations)
        self.on_settled = on_settled
        self.clock = clock
        self._stopping: asyncio.Event | None = None

    def gates_tool(self, tool: str) -> bool:
        return self.policy.enabled and self.policy.gates_tool(tool, *self.tool_info(tool))

    def gates_peer(self, peer: str) -> bool:
        return self.policy.enabled and self.policy.gates_peer(peer)

    async def admit(self, tool: str, arguments: dict, where: Where) -> Verdict:
        """Wait for the decision on this call (the caller asked gates_tool/gates_peer first)."""
        approval = await self.store.get(approval_id(where.run_id, where.step, where.index)) if where.resumed else None
        if approval is None:
            approval = await self._request(tool, arguments, where)
        if approval.status == PENDING:
            approval = await self._wait(approval, where)
        return self._verdict(approval)

    async def _request(self, tool: str, arguments: dict, where: Where) -> Approval:
        now = self.clock()
        approval = Approval(id=approval_id(where.run_id, where.step, where.index), tool=tool, arguments=arguments,
                            session_id=where.session_id, agent=self.agent, requested_at=now,
                            expires_at=now + self.policy.timeout_seconds, step=where.step,
                            requester=where.requester, run_id=where.run_id)
        await self.store.add(approval)
        await self.memory.record(where.session_id, REQUESTED_EVENT, approval.requested_event(), {"step": where.step})
        log.info("approval %s: %s waits for a decision (session %s)", approval.id, tool, where.session_id)
        return approval

    async def _wait(self, approval: Approval, where: Where) -> Approval:
        if where.watcher is not None:
            await where.watcher.approval_pending(approval)
        try:
            settled = await self._decision(approval)
        except asyncio.CancelledError:  # the request went away: nothing waits for this call any more
            if not self.stopping:
                await self._expire(approval, "the request was cancelled while waiting (its client went away)")
            raise
        if where.watcher is not None:
            await where.watcher.approval_settled(settled)
        return settled

    async def _decision(self, approval: Approval) -> Approval:
        waiting = asyncio.ensure_future(self.store.wait(approval.id, approval.expires_at - self.clock()))
        stopping = asyncio.ensure_future(self._stop_event().wait())
        try:
            await asyncio.wait((waiting, stopping), return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (waiting, stopping):
                if not task.done():
                    task.cancel()
        if not waiting.done() or waiting.cancelled():
            raise ApprovalInterrupted(self._interrupted(approval))
        settled = waiting.result()
        if settled is not None and settled.status != PENDING:
            return settled
        outcome = "the call runs" if self.policy.proceed_on_timeout else "the call is not run"
        rule = "proceed" if self.policy.proceed_on_timeout else "reject"
        return await self._expire(approval, f"{TIMED_OUT} {self.policy.timeout_seconds} s "
                                            f"(TOOL_APPROVAL_TIMEOUT_SECONDS); {outcome} (TOOL_APPROVAL_ON_TIMEOUT={rule})")

    def _interrupted(self, approval: Approval) -> str:
        if self.store.journal.durable:
            return (f"the agent process is stopping; approval {approval.id} stays pending in Redis and the run "
                    f"resumes after the decision on another agent process; its answer will be in the memory of "
                    f"session {approval.session_id}")
        return (f"the agent process is stopping; approval {approval.id} and its run are lost "
                "(approvals are kept in this process with local memory)")

    async def _expire(self, approval: Approval, reason: str) -> Approval:
        try:
            return await self._settle(approval.id, EXPIRED, None, reason, before_expiry=False)
        except AlreadySettled as settled:  # a decision came first
            return settled.approval

    async def visible(self, who: Principal) -> list[Approval]:
        """The approvals ``who`` may see, oldest first (NotAllowed: none at all)."""
        refused = self.access.may_list_approvals(who)
        if refused is not None:
            raise NotAllowed(refused)
        return [approval for approval in await self.store.all()
                if self.access.may_see_approval(who, approval.requester)]

    async def decide(self, approval_id_: str, decision: str, by: Principal, reason: str) -> Approval:
        """A person's decision; UnknownApproval, NotAllowed when the rules refuse ``by``, or
        AlreadySettled when it came too late."""
        if self.access.enabled:
            approval = await self.store.get(approval_id_)
            if approval is None:
                raise UnknownApproval(approval_id_)
            refused = self.access.may_decide(by, approval.requester)
            if refused is not None:
                if self.audit is not None:
                    self.audit.record("approval.refused", by.text, f"approval/{approval_id_}", decision=decision,
                                      tool=approval.tool, detail=refused)
                raise NotAllowed(refused)
        settled = await self._settle(approval_id_, DECISIONS[decision], by.text, reason, before_expiry=True)
        if self.audit is not None:
            self.audit.record(f"approval.{settled.status}", by.text, f"approval/{approval_id_}", tool=settled.tool,
                              requester=settled.requester, session=settled.session_id)
        return settled

    async def _settle(self, approval_id_: str, status: str, by: str | None, reason: str,
                      before_expiry: bool) -> Approval:
        settled = await self.store.settle(approval_id_, status, by, self.clock(), reason, before_expiry)
        await self.memory.record(settled.session_id, EVENTS[status], settled.settled_event(), {"step": settled.step})
        if self.on_settled is not None:
            self.on_settled(status, (settled.decided_at or settled.requested_at) - settled.requested_at)
        log.info("approval %s %s%s", settled.id, status, f" by {by}" if by else "")
        return settled

    def _verdict(self, approval: Approval) -> Verdict:
        if approval.status == APPROVED:
            return Verdict(True, approval=approval)
        if approval.status == REJECTED:
            why = f": {approval.reason}" if approval.reason else " (no reason given)"
            return Verdict(False, f"{approval.decided_by or 'a person'} rejected the call{why}", approval)
        if approval.status == EXPIRED and self.policy.proceed_on_timeout and approval.reason.startswith(TIMED_OUT):
            return Verdict(True, approval=approval)
        return Verdict(False, approval.reason or "the approval expired", approval)

    def _stop_event(self) -> asyncio.Event:
        if self._stopping is None:
            self._stopping = asyncio.Event()
        return self._stopping

    @property
    def stopping(self) -> bool:
        return self._stopping is not None and self._stopping.is_set()

    def interrupt(self) -> None:
        """The process stops: every call still waiting gives up (ApprovalInterrupted); a durable
        store keeps the approval pending for the run's next process."""
        self._stop_event().set()

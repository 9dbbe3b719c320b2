"""Approvals in this process: lost when it ends (docs/runtime.md, "Approvals")."""

from __future__ import annotations

import asyncio
from collections import OrderedDict

from .record import PENDING, Approval
from .store import MAX_APPROVALS, AlreadySettled, ApprovalStore, UnknownApproval, Waiters


class LocalApprovalStore(ApprovalStore):
    """Every method runs on the event loop without awaiting inside, so a settle is atomic."""

    def __init__(self, limit: int = MAX_APPROVALS) -> None:
        self._approvals: OrderedDict[str, Approval] = OrderedDict()
        self._waiters = Waiters()
        self._limit = limit

    async def add(self, approval: Approval) -> None:
        self._approvals[approval.id] = approval
        while len(self._approvals) > self._limit:
            self._approvals.popitem(last=False)

    async def get(self, approval_id: str) -> Approval | None:
        return self._approvals.get(approval_id)

    async def all(self) -> list[Approval]:
        return list(self._approvals.values())

    async def settle(self, approval_id, status, by, at, reason, before_expiry) -> Approval:
        approval = self._approvals.get(approval_id)
        if approval is None:
            raise UnknownApproval(approval_id)
        current = approval.status_at(at) if before_expiry else approval.status
        if current != PENDING:
            raise AlreadySettled(approval, current)
        settled = self._approvals[approval_id] = approval.settled(status, by, at, reason)
        self._waiters.wake(settled)
        return settled

    async def wait(self, approval_id: str, timeout: float) -> Approval | None:
        approval = self._approvals.get(approval_id)
        if approval is None or approval.status != PENDING:
            return approval
        waiter = self._waiters.add(approval_id)
        try:
            return await asyncio.wait_for(waiter, max(timeout, 0))
        except asyncio.TimeoutError:
            return None
        finally:
            self._waiters.discard(approval_id, waiter)

"""Where approvals are kept, and the journal of the runs that wait for them.

``ApprovalStore`` is the interface of both backends: ``LocalApprovalStore`` (this process; what
waits is lost with it) and ``RedisApprovalStore`` (``MEMORY_BACKEND=redis``: approvals and the
state of each waiting run are in Redis, so a restarted process resumes the run once it is
decided). ``settle`` is the one change of state: pending to approved, rejected or expired,
once, atomically, whoever asks first (a person, the waiter's timeout).
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod

from .journal import RunJournal
from .record import Approval

# Approvals kept per agent, decided or not (the oldest dropped first).
MAX_APPROVALS = 1000


class UnknownApproval(Exception):
    """No approval has this id."""


class AlreadySettled(Exception):
    """The approval was decided or expired before."""

    def __init__(self, approval: Approval, status: str) -> None:
        super().__init__(f"approval {approval.id} is already {status}")
        self.approval, self.status = approval, status


class Waiters:
    """Who in this process waits for which approval: a future each, told the settled approval."""

    def __init__(self) -> None:
        self._futures: dict[str, list[asyncio.Future]] = {}

    def __contains__(self, approval_id: str) -> bool:
        return approval_id in self._futures

    def add(self, approval_id: str) -> asyncio.Future:
        future = asyncio.get_running_loop().create_future()
        self._futures.setdefault(approval_id, []).append(future)
        return future

    def discard(self, approval_id: str, future: asyncio.Future) -> None:
        waiting = self._futures.get(approval_id)
        if waiting and future in waiting:
            waiting.remove(future)
            if not waiting:
                del self._futures[approval_id]

    def wake(self, approval: Approval) -> None:
        for future in self._futures.pop(approval.id, ()):
            if not future.done():
                future.set_result(approval)


class ApprovalStore(ABC):
    journal = RunJournal()  # of runs waiting for a decision: kept only where approvals outlive this process

    @abstractmethod
    async def add(self, approval: Approval) -> None: ...

    @abstractmethod
    async def get(self, approval_id: str) -> Approval | None: ...

    @abstractmethod
    async def all(self) -> list[Approval]:
        """Every approval kept, oldest first."""

    @abstractmethod
    async def settle(self, approval_id: str, status: str, by: str | None, at: float, reason: str,
                     before_expiry: bool) -> Approval:
        """Pending -> ``status``; UnknownApproval, or AlreadySettled (with ``before_expiry``, a
        pending approval past its ``expires_at`` counts as expired)."""

    @abstractmethod
    async def wait(self, approval_id: str, timeout: float) -> Approval | None:
        """The approval once settled, or None after ``timeout`` seconds."""

    async def close(self) -> None: ...

"""Human approval before risky tool calls (issue 20; docs/runtime.md, "Approvals").

policy.py says which calls wait (``TOOL_APPROVAL_*``), record.py what one approval is,
store.py / local_store.py / redis_store.py where approvals (and the runs waiting for them) are
kept, and gate.py the one interface the loop calls, ``ApprovalGate.admit``: may this call run?
"""

from __future__ import annotations

from ..core.settings import AgentSettings
from .gate import ALLOWED, ApprovalGate, ApprovalInterrupted, ApprovalWatcher, NotAllowed, Verdict, Where
from .policy import ApprovalPolicy
from .record import DECISIONS, STATUSES, Approval, new_run_id
from .store import AlreadySettled, ApprovalStore, UnknownApproval


def create_store(config: AgentSettings) -> ApprovalStore:
    """In Redis when the memory is there (a waiting run survives a restart), else in this process."""
    if config.memory.backend == "redis":
        from .redis_store import RedisApprovalStore

        return RedisApprovalStore(config.memory, config.name)
    from .local_store import LocalApprovalStore

    return LocalApprovalStore()


__all__ = ["ALLOWED", "AlreadySettled", "Approval", "ApprovalGate", "ApprovalInterrupted", "ApprovalPolicy",
           "ApprovalStore", "ApprovalWatcher", "DECISIONS", "NotAllowed", "STATUSES", "UnknownApproval", "Verdict",
           "Where", "create_store", "new_run_id"]

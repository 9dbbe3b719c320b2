"""trigger_status(): the status a control plane writes for a Trigger (phase, conditions, runs)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Mapping

from kaos.triggers.runs import RunBook, timestamp

READY, WAITING, SUSPENDED, FAILED = "Ready", "Waiting", "Suspended", "Failed"
SCHEDULE_FAILED = "ScheduleFailed"  # the Ready condition's reason while a failed schedule waits to restart


def agent_problem(agent_name: str, agent: Mapping[str, Any] | None) -> str | None:
    """Why the target Agent cannot take a run now, or None."""
    if agent is None:
        return f"Agent {agent_name} does not exist"
    status = agent.get("status") or {}
    if not status.get("ready"):
        detail = f" ({status['phase']}: {status.get('message')})" if status.get("phase") else ""
        return f"Agent {agent_name} is not ready{detail}"
    return None


def trigger_status(
    resource: Mapping[str, Any],
    *,
    problem: str | None,
    agent: Mapping[str, Any] | None,
    book: RunBook,
    last_run: datetime | None = None,
    next_run: datetime | None = None,
    run_now: str | None = None,
    schedule_problem: str | None = None,
) -> dict[str, Any]:
    """``problem``: why the spec cannot run (TriggerSpecError, a missing Secret key), or None;
    ``agent``: the target Agent with its status (None: it does not exist); ``last_run`` and
    ``next_run`` for a schedule; ``run_now``: the run-now request that last started a run;
    ``schedule_problem``: why the schedule stopped until it restarts (Failed, reason
    ScheduleFailed, no nextRun). The webhook's secret is never read here."""
    spec = resource.get("spec") or {}
    waiting = agent_problem(spec.get("agent", ""), agent)
    reason = None
    if problem:
        phase, message = FAILED, problem
    elif schedule_problem:
        phase, message, reason = FAILED, schedule_problem, SCHEDULE_FAILED
    elif spec.get("suspend"):
        phase, message = SUSPENDED, "suspended: no run starts"
    elif waiting:
        phase, message = WAITING, waiting
    else:
        scheduled = bool(spec.get("schedule")) and next_run is not None
        phase, message = READY, ("next run at " + timestamp(next_run)) if scheduled else "waiting for webhook calls"
    result: dict[str, Any] = {
        "phase": phase,
        "ready": phase == READY,
        "message": message,
        "conditions": [
            _condition("Ready", phase == READY, reason or phase, message),
            _condition("AgentReady", waiting is None, "AgentReady" if waiting is None else "AgentNotReady",
                       waiting or ""),
        ],
        **book.status(),
    }
    generation = (resource.get("metadata") or {}).get("generation")
    if generation is not None:
        result["observedGeneration"] = generation
    if last_run is not None:
        result["lastRun"] = timestamp(last_run)
    if run_now:
        result["runNow"] = run_now
    if next_run is not None and phase not in (SUSPENDED, FAILED) and spec.get("schedule"):
        result["nextRun"] = timestamp(next_run)
    return result


def _condition(kind: str, true: bool, reason: str, message: str) -> dict[str, str]:
    return {"type": kind, "status": "True" if true else "False", "reason": reason, "message": message}

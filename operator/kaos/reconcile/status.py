"""status(): the status subresource to write for a resource and its plan; failed(): one marked Failed."""

from __future__ import annotations

import copy
from typing import Any, Mapping

from kaos.reconcile.plan import DEPLOY, FAILED, WAITING, Plan

PENDING, READY = "Pending", "Ready"


def status(
    resource: Mapping[str, Any],
    plan: Plan,
    ready_replicas: int | None,
    replicas: int | None,
) -> dict[str, Any]:
    """ready_replicas/replicas: read from the workload's Deployment (None: not seen yet)."""
    phase, message = _phase(plan, ready_replicas)
    generation = (resource.get("metadata") or {}).get("generation")
    result = {
        "phase": phase,
        "ready": phase == READY,
        "endpoint": plan.endpoint,
        "message": message,
        "replicas": replicas or 0,
        "readyReplicas": ready_replicas or 0,
        "conditions": [
            _condition("Ready", phase == READY, phase, message),
            _condition(
                "DependenciesReady",
                plan.dependencies_ready,
                "AllReady" if plan.dependencies_ready else "NotReady",
                "" if plan.dependencies_ready else plan.message,
            ),
        ],
    }
    if generation is not None:
        result["observedGeneration"] = generation
    return result


def failed(status: Mapping[str, Any], message: str, reason: str = "Failed") -> dict[str, Any]:
    """The status marked Failed: phase Failed, not ready, ``message``, and its Ready condition
    False for ``reason`` (what the plan could not see: a helm failure, a process that cannot run)."""
    result = copy.deepcopy(dict(status))
    result.update(phase=FAILED, ready=False, message=message)
    result["conditions"] = [
        {**condition, "status": "False", "reason": reason, "message": message}
        if condition.get("type") == "Ready"
        else condition
        for condition in result.get("conditions", [])
    ]
    return result


def _phase(plan: Plan, ready_replicas: int | None) -> tuple[str, str]:
    if plan.phase in (FAILED, WAITING):
        return plan.phase, plan.message
    assert plan.phase == DEPLOY, plan.phase
    if plan.values is None:
        return READY, plan.message
    desired = plan.values.get("replicas", 1)
    ready = ready_replicas or 0
    if ready_replicas is not None and ready >= desired:
        return READY, plan.message
    progress = f"release {plan.release} deployed; {ready}/{desired} replicas ready"
    return PENDING, f"{progress}; {plan.message}" if plan.message else progress


def _condition(kind: str, true: bool, reason: str, message: str) -> dict[str, str]:
    return {"type": kind, "status": "True" if true else "False", "reason": reason, "message": message}

"""The one writer of status: each resource's resync timer.

kopf applies a handler's patch after the handler returns, so two writers (the change
handlers and the timer) could land their patches in either order, an older status after a
newer one. So the change handlers converge the release and record the outcome
(kaos.operator.reconciler), and only the timer writes status: from the last outcome and the
Deployment's replica counts in the index, diffed against the status of the body kopf passes
it (the live object), not against a copy of what was written last. A write that has not yet
reached that body is written again with the same values at worst; nothing can leave a stale
status in place.
"""

from __future__ import annotations

import datetime
from typing import Any, Mapping

from kaos.operator.reconciler import OperatorState, Outcome
from kaos.operator.world import World
from kaos.reconcile import MCPSERVER, ref_of


async def write_status(body, outcome: Outcome, *, world: World, state: OperatorState, patch, logger) -> None:
    """Put into kopf's ``patch`` each field of the status that differs from the live one."""
    ref = ref_of(body)
    replicas = world.replicas(ref)
    state.record(ref).saw_deployment(replicas)
    desired = outcome.status(*replicas)
    if ref.kind == MCPSERVER and desired["ready"]:
        desired["tools"] = await state.tools.tools(ref, desired["endpoint"], logger=logger)
    live = dict(body.get("status") or {})  # the body follows the live object; this tick diffs one state of it
    for key, value in with_transition_times(live, desired).items():
        if live.get(key) != value:
            patch.status[key] = value


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def with_transition_times(previous: Mapping[str, Any], desired: dict) -> dict:
    """Keep a condition's lastTransitionTime while its status stays the same."""
    before = {c.get("type"): c for c in previous.get("conditions") or []}
    conditions = []
    for condition in desired["conditions"]:
        old = before.get(condition["type"]) or {}
        same = old.get("status") == condition["status"] and old.get("lastTransitionTime")
        conditions.append({**condition, "lastTransitionTime": old["lastTransitionTime"] if same else _now()})
    return {**desired, "conditions": conditions}

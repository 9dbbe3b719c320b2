"""One reconcile of one resource: plan with the core, converge its Helm release, write status.

Called by the kopf change handlers (force=True) and by each resource's resync timer
(force=False). Helm runs only when the chart values differ from the last successful run in
this process; the first time in a process (after a restart) only when the deployed release
differs (its values or the objects the chart renders now); the timer also waits out the
backoff after a helm failure, while a change handler (a kopf retry, or the user's edit) tries
at once.

The timer and the change handlers run concurrently on the same object (a timer's first tick
comes at once, alongside the creation or resume handler), each with a body taken before the
other's status patch reached the API. So the status is diffed against what this process
wrote last for the same inputs, not against a body that may predate that write; and the
resource's own part of the fingerprint is its uid and generation (what the plan reads), not
its resourceVersion, which every status and kopf annotation write changes.
"""

from __future__ import annotations

import asyncio
import collections
import copy
import datetime
from dataclasses import dataclass, field
from typing import Any, Mapping

from kaos import crds
from kaos.backoff import Backoff
from kaos.helm import HelmError
from kaos.mcp_discovery import ToolDiscovery
from kaos.metrics import reconciled, started
from kaos.operator.world import World, plain
from kaos.reconcile import (
    DEPLOY,
    MCPSERVER,
    Plan,
    Ref,
    cluster_endpoint_of,
    dependencies,
    failed,
    failed_plan,
    plan,
    ref_of,
    release_name,
    status,
)
from kaos.settings import Settings, variable

_UNSET = object()
# Resync ticks in a row that must see a status other than the one last written before it is
# written again (see _status_overwritten).
OVERWRITE_TICKS = 2


@dataclass
class HelmFailure:
    command: str
    message: str
    delay: float

    def describe(self) -> str:
        return f"helm {self.command} failed: {self.message} (retrying in {self.delay:g}s)"


@dataclass
class OperatorState:
    """Shared by all handlers (through kopf's memo)."""

    settings: Settings
    backend: Any  # apply(chart, release, namespace, values) / uninstall(release, namespace): kaos.helm.Helm
    backoff: Backoff
    tools: ToolDiscovery = field(default_factory=ToolDiscovery)  # status.tools of the MCPServers
    applied: dict = field(default_factory=dict)  # Ref -> the values of the last successful helm run
    failures: dict = field(default_factory=dict)  # Ref -> HelmFailure of the last helm run
    seen: dict = field(default_factory=dict)  # Ref -> fingerprint of the inputs of the last reconcile
    written: dict = field(default_factory=dict)  # Ref -> (fingerprint, the status as left by that reconcile)
    overwrites: dict = field(default_factory=dict)  # Ref -> resync ticks in a row that saw another status
    deployments_seen: set = field(default_factory=set)  # Refs whose Deployment the index has shown
    locks: collections.defaultdict = field(default_factory=lambda: collections.defaultdict(asyncio.Lock))

    def forget(self, ref: Ref) -> None:
        for table in (self.applied, self.failures, self.seen, self.written, self.overwrites, self.locks):
            table.pop(ref, None)
        self.deployments_seen.discard(ref)
        self.backoff.succeed(ref)
        self.tools.forget(ref)

    def retry_due(self, ref: Ref) -> bool:
        """A helm failure, or a failed tools/list whose backoff has passed, waits for a retry."""
        return ref in self.failures or self.tools.retry_due(ref)


def plan_for(resource: Mapping[str, Any], world: World, settings: Settings) -> tuple[dict, Plan]:
    """The resource with its CRD defaults, and its plan against what the world holds now."""
    ref = ref_of(resource)
    try:
        resource = crds.validate(dict(resource), settings.crd_dir)
    except crds.ValidationError as invalid:
        return dict(resource), failed_plan(ref, str(invalid))
    except OSError as error:
        return dict(resource), failed_plan(ref, f"the operator cannot read the CRD schemas ({error}); check {variable('charts_dir')}")
    observed = {dependency: world.get(dependency) for dependency in dependencies(resource)}
    known = {**observed, ref: resource}
    return resource, plan(resource, observed, settings, cluster_endpoint_of(settings, known))


def fingerprint(resource: Mapping[str, Any], world: World) -> tuple:
    """What a reconcile reads: the resource's spec (by uid and generation: its status and the
    annotations kopf writes are not inputs), its dependencies by version, and its Deployment."""
    ref = ref_of(resource)
    metadata = resource.get("metadata") or {}
    dependency_versions = tuple(_version(world.get(dependency)) for dependency in dependencies(resource))
    return (metadata.get("uid"), metadata.get("generation")), dependency_versions, world.replicas(ref)


def _version(obj: Mapping[str, Any] | None):
    return None if obj is None else (obj.get("metadata") or {}).get("resourceVersion", id(obj))


async def reconcile(body, *, world: World, state: OperatorState, patch, logger, force: bool) -> HelmFailure | None:
    """Returns the helm failure, if any, after writing it to status (the caller decides to retry).

    Without force, nothing is done when no input changed since the last reconcile, no helm
    failure waits for a retry and the status is still what the last reconcile wrote.
    """
    ref = ref_of(body)
    async with state.locks[ref]:
        resource = plain(body)  # after the wait: a timer's body follows the live object
        inputs = fingerprint(resource, world)
        rewrite = False
        if not force and not state.retry_due(ref) and state.seen.get(ref) == inputs:
            if not _status_overwritten(ref, resource, state):
                state.overwrites.pop(ref, None)
                return None
            # A body taken before our own last patch arrived differs too, for a moment: only a
            # second tick that still sees another status writes it again.
            state.overwrites[ref] = state.overwrites.get(ref, 0) + 1
            if state.overwrites[ref] < OVERWRITE_TICKS:
                return None
            rewrite = True
        state.overwrites.pop(ref, None)
        state.seen[ref] = inputs
        since = started()
        previous = (resource.get("status") or {}) if rewrite else _previous_status(ref, resource, inputs, state)
        resource, current = plan_for(resource, world, state.settings)
        failure = None
        if current.phase == DEPLOY:
            drifted = _deployment_vanished(ref, current, world, state, logger)
            failure = await _converge(ref, current, state, logger, force or drifted, drifted)
        ready_replicas, replicas = world.replicas(ref)
        desired = status(resource, current, ready_replicas, replicas)
        if failure is not None:
            desired = failed(desired, failure.describe(), reason="HelmFailed")
        if ref.kind == MCPSERVER and desired["ready"]:
            desired["tools"] = await state.tools.tools(ref, desired["endpoint"], logger=logger)
        state.written[ref] = (inputs, _patch_status(previous, desired, patch))
        reconciled(ref.kind, desired["phase"], since)
        return failure


async def uninstall(body, *, state: OperatorState, logger) -> None:
    ref = ref_of(body)
    async with state.locks[ref]:
        await state.backend.uninstall(release_name(ref.kind, ref.name), ref.namespace)
        logger.info(f"uninstalled release {release_name(ref.kind, ref.name)}")
    state.forget(ref)


def _deployment_vanished(ref: Ref, current: Plan, world: World, state: OperatorState, logger) -> bool:
    """The release's Deployment was seen and is gone (deleted by hand, or by anyone but helm):
    the release must be applied again, whatever its recorded values say."""
    if world.replicas(ref) != (None, None):
        state.deployments_seen.add(ref)
        return False
    if ref not in state.deployments_seen:
        return False
    state.deployments_seen.discard(ref)
    state.applied.pop(ref, None)
    logger.warning(f"the Deployment of release {current.release} is gone; applying the release again")
    return True


async def _converge(ref: Ref, current: Plan, state: OperatorState, logger, force: bool,
                    drifted: bool = False) -> HelmFailure | None:
    values = current.values
    if state.applied.get(ref, _UNSET) == values:
        return None
    if not force and state.backoff.blocked(ref):
        return state.failures.get(ref)
    if (ref not in state.applied and values is not None and not drifted
            and await _already_deployed(ref, current, state, logger)):
        state.applied[ref] = copy.deepcopy(values)
        return None
    command = f"upgrade --install {current.release}" if values is not None else f"uninstall {current.release}"
    try:
        if values is None:
            await state.backend.uninstall(current.release, ref.namespace)
        else:
            revision = await state.backend.apply(current.chart, current.release, ref.namespace, values)
            logger.info(f"release {current.release} applied (revision {revision})")
    except Exception as error:  # HelmError, or anything else from helm's edge: retried the same way
        message = str(error) if isinstance(error, HelmError) else f"{type(error).__name__}: {error}"
        failure = HelmFailure(command, message, state.backoff.fail(ref))
        state.failures[ref] = failure
        state.applied.pop(ref, None)
        logger.warning(failure.describe())
        return failure
    state.applied[ref] = copy.deepcopy(values)
    state.failures.pop(ref, None)
    state.backoff.succeed(ref)
    return None


async def _already_deployed(ref: Ref, current: Plan, state: OperatorState, logger) -> bool:
    """First reconcile in this process (a start or restart): is the release already what the plan asks for?"""
    try:
        revision = await state.backend.deployed_revision(current.chart, current.release, ref.namespace, current.values)
    except Exception as error:  # the upgrade that follows retries and reports helm's trouble
        logger.info(f"release {current.release}: cannot compare with the deployed revision ({error}); upgrading")
        return False
    if revision is None:
        return False
    logger.info(f"release {current.release} is up to date (revision {revision})")
    return True


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _with_transition_times(previous: Mapping[str, Any], desired: dict) -> dict:
    """Keep a condition's lastTransitionTime while its status stays the same."""
    before = {c.get("type"): c for c in previous.get("conditions") or []}
    conditions = []
    for condition in desired["conditions"]:
        old = before.get(condition["type"]) or {}
        same = old.get("status") == condition["status"] and old.get("lastTransitionTime")
        conditions.append({**condition, "lastTransitionTime": old["lastTransitionTime"] if same else _now()})
    return {**desired, "conditions": conditions}


def _status_overwritten(ref: Ref, resource: Mapping[str, Any], state: OperatorState) -> bool:
    """The live status is not what the last reconcile wrote. kopf applies a handler's patch
    after the handler returns, so a creation handler's patch can land after a timer's newer one
    and put back the older status (e.g. 0/1 replicas ready once the Deployment is ready, for
    good, since no input changes again); anyone else may have written it too."""
    written = state.written.get(ref)
    if written is None:
        return False
    live = resource.get("status") or {}
    return any(live.get(key) != value for key, value in written[1].items())


def _previous_status(ref: Ref, resource: Mapping[str, Any], inputs: tuple, state: OperatorState) -> Mapping[str, Any]:
    """The status to diff against: what the last reconcile of the same inputs left it as (the
    body may have been taken before that reconcile's patch was applied), else the body's."""
    written = state.written.get(ref)
    if written is not None and written[0] == inputs:
        return written[1]
    return resource.get("status") or {}


def _patch_status(previous: Mapping[str, Any], desired: dict, patch) -> dict:
    """Put the differences into kopf's patch; returns the status once the patch is applied."""
    desired = _with_transition_times(previous, desired)
    for key, value in desired.items():
        if previous.get(key) != value:
            patch.status[key] = value
    return {**previous, **desired}

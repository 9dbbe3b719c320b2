"""One converge of one resource: plan with the core and converge its Helm release; no status.

Called by the kopf change handlers (force=True) and by each resource's status pass
(force=False), which then writes status from the outcome (kaos.operator.status, the one
writer). Helm runs only when the chart values differ from the last successful run in this
process; the first time in a process (after a restart) only when the deployed release
differs (its values or the objects the chart renders now), a resource just created excepted
(it has no release to compare with: one helm run, not two); the status pass also waits out
the backoff after a helm failure, while a change handler (a kopf retry, or the user's edit)
tries at once. At most ``helm_concurrency`` helm processes run at once (kaos.operator.wakeups);
a change to a release applied before goes ahead of first installs. A release whose Deployment
vanished is applied again; so is one with an object deleted or edited by hand (a suspect of
kaos.operator.drift, compared with helm's manifest of the release first).

The resource's own part of the fingerprint is its uid and generation (what the plan reads),
not its resourceVersion, which every status and kopf annotation write changes.
"""

from __future__ import annotations

import asyncio
import copy
from dataclasses import dataclass, field
from typing import Any, Mapping

from kaos import crds
from kaos.backoff import Backoff
from kaos.helm import HelmError
from kaos.mcp_discovery import ToolDiscovery
from kaos.metrics import reconciled, started
from kaos.model_mirror import missing_message, parse_registry
from kaos.operator.drift import ObjectKey, drifted
from kaos.operator.wakeups import HelmGate, Wakeups
from kaos.operator.world import World, plain
from kaos.reconcile import (
    DEPLOY,
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
from kaos.registry_client import manifest_problem
from kaos.settings import Settings, variable

_UNSET = object()  # no helm run in this process yet: the deployed revision may already be the plan
_GONE = object()  # the release's Deployment vanished: apply again, whatever helm's records say


@dataclass
class HelmFailure:
    command: str
    message: str
    delay: float
    reason = "HelmFailed"

    def describe(self) -> str:
        return f"helm {self.command} failed: {self.message} (retrying in {self.delay:g}s)"


@dataclass
class MirrorFailure:
    """A Hosted ModelAPI's model is not in the platform's model mirror: nothing is deployed (its
    pod could only fail), and the mirror is asked again with the same backoff as helm."""

    message: str
    delay: float
    reason = "ModelNotInMirror"

    def describe(self) -> str:
        return f"{self.message} (checking again in {self.delay:g}s)"


@dataclass(frozen=True)
class Outcome:
    """What one converge found: the resource (with its CRD defaults) as planned, the plan,
    and the helm failure that stands (only while the plan deploys)."""

    inputs: tuple  # the fingerprint it was planned from
    resource: dict
    plan: Plan
    failure: HelmFailure | MirrorFailure | None

    def status(self, ready_replicas: int | None, replicas: int | None) -> dict:
        """The status it means with these replica counts (without tools and transition times)."""
        desired = status(self.resource, self.plan, ready_replicas, replicas)
        return failed(desired, self.failure.describe(), reason=self.failure.reason) if self.failure else desired


@dataclass
class Record:
    """What the operator keeps of one resource between converges."""

    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    outcome: Outcome | None = None  # of the last converge
    failure: HelmFailure | MirrorFailure | None = None  # of the last helm run (or mirror check), until one succeeds
    applied: Any = _UNSET  # the values of the last successful helm run
    deployment_seen: bool = False  # the index has shown the release's Deployment since
    created: bool = False  # seen from its creation on by this process: no release of it to compare with
    suspects: dict[ObjectKey, dict | None] = field(default_factory=dict)  # objects of its release deleted
    # (None) or last written by someone but helm, as last seen: compared with helm's manifest next converge

    def saw_deployment(self, replicas: tuple[int | None, int | None]) -> None:
        """A status was written from these counts: a Deployment it reported is one the next
        converge must find, or apply again."""
        if replicas != (None, None):
            self.deployment_seen = True

    def deployment_vanished(self, replicas: tuple[int | None, int | None]) -> bool:
        """The release's Deployment was seen and is gone now (deleted by hand, or by anyone but helm)."""
        present = replicas != (None, None)
        vanished = self.deployment_seen and not present
        self.deployment_seen = present
        return vanished


@dataclass
class OperatorState:
    """Shared by all handlers (through kopf's memo)."""

    settings: Settings
    backend: Any  # apply(chart, release, namespace, values) / uninstall(release, namespace): kaos.helm.Helm
    backoff: Backoff
    tools: ToolDiscovery = field(default_factory=ToolDiscovery)  # status.tools of the MCPServers
    records: dict[Ref, Record] = field(default_factory=dict)
    wakeups: Wakeups = field(default_factory=Wakeups)  # when each resource's status pass runs
    gate: HelmGate | None = None  # how many helm processes run at once (settings.helm_concurrency)

    def __post_init__(self) -> None:
        if self.gate is None:
            self.gate = HelmGate(self.settings.helm_concurrency)

    def record(self, ref: Ref) -> Record:
        return self.records.setdefault(ref, Record())

    def forget(self, ref: Ref) -> None:
        self.records.pop(ref, None)
        self.backoff.succeed(ref)
        self.tools.forget(ref)
        self.wakeups.forget(ref)


def plan_for(resource: Mapping[str, Any], world: World, settings: Settings) -> tuple[dict, Plan]:
    """The resource with its CRD defaults, and its plan against what the world holds now."""
    ref = ref_of(resource)
    try:
        resource = crds.validate(dict(resource), settings.crd_dir, unknown_fields=True)
    except crds.ValidationError as invalid:
        return dict(resource), failed_plan(ref, str(invalid))
    except OSError as error:
        return dict(resource), failed_plan(ref, f"the operator cannot read the CRD schemas ({error}); check {variable('charts_dir')}")
    observed = {dependency: world.get(dependency) for dependency in dependencies(resource)}
    known = {**observed, ref: resource}
    return resource, plan(resource, observed, settings, cluster_endpoint_of(settings, known))


def fingerprint(resource: Mapping[str, Any], world: World, needs: list[Ref] | None = None) -> tuple:
    """What a converge reads: the resource's spec (by uid and generation: its status and the
    annotations kopf writes are not inputs), its dependencies by version, and its Deployment."""
    ref = ref_of(resource)
    metadata = resource.get("metadata") or {}
    needs = dependencies(resource) if needs is None else needs
    dependency_versions = tuple(_version(world.get(dependency)) for dependency in needs)
    return (metadata.get("uid"), metadata.get("generation")), dependency_versions, world.replicas(ref)


def _version(obj: Mapping[str, Any] | None):
    return None if obj is None else (obj.get("metadata") or {}).get("resourceVersion", id(obj))


async def converge(body, *, world: World, state: OperatorState, logger, force: bool, created: bool = False) -> Outcome:
    """Plan the resource and converge its release; the outcome is recorded and returned.

    Without force, the last outcome stands when no input changed since and no helm retry is due.
    ``created``: kopf's creation handler calls (or no handler has yet): no release of it can be
    deployed already, now or at a later converge of this process before its first helm run.
    """
    ref = ref_of(body)
    record = state.record(ref)
    async with record.lock:
        # after the wait: a timer's body follows the live object; read in place, copied only to plan
        needs = dependencies(body)
        state.wakeups.depends(ref, needs)
        inputs = fingerprint(body, world, needs)
        vanished = record.deployment_vanished(world.replicas(ref))
        last = record.outcome
        if not force and not vanished and not record.suspects and last is not None and last.inputs == inputs \
                and not _retry_due(ref, last, state):
            return last
        since = started()
        resource, current = plan_for(plain(body), world, state.settings)
        record.created = record.created or created
        failure = None
        repair = False
        if current.phase == DEPLOY:
            if vanished:
                record.applied = _GONE
                logger.warning(f"the Deployment of release {current.release} is gone; applying the release again")
            elif record.suspects and await _drift_found(ref, record, current, state, logger):
                record.applied, repair = _GONE, True
            failure = await _converge_release(ref, record, current, state, logger, force or vanished or repair)
        else:
            record.suspects.clear()  # nothing deployed is kept up (Waiting, Failed): nothing to repair
        record.outcome = Outcome(inputs, resource, current, failure)
        reconciled(ref.kind, record.outcome.status(*world.replicas(ref))["phase"], since)
        return record.outcome


async def _drift_found(ref: Ref, record: Record, current: Plan, state: OperatorState, logger) -> bool:
    """Do the suspects (objects of the release deleted, or written by someone but helm) lack
    something of helm's manifest of the release? One helm process (``helm status``); the suspects are
    taken (an apply already due, after a vanished Deployment, repairs them too)."""
    suspects, record.suspects = record.suspects, {}
    if record.applied is _GONE:
        return False
    try:
        async with state.gate.slot(urgent=True):
            manifest = await state.backend.manifest(current.release, ref.namespace)
    except Exception as error:  # helm's trouble: applying again is what a repair would do anyway
        logger.warning(f"release {current.release}: cannot read its manifest ({error}); applying it again")
        return True
    found = drifted(manifest, suspects)
    if found:
        changes = "; ".join(f"{kind} {name}: {', '.join(paths)}" for (kind, name), paths in sorted(found.items()))
        logger.warning(f"release {current.release} drifted ({changes}); applying the release again")
    return bool(found)


def _retry_due(ref: Ref, outcome: Outcome, state: OperatorState) -> bool:
    return outcome.failure is not None and not state.backoff.blocked(ref)


async def uninstall(body, *, state: OperatorState, logger) -> None:
    ref = ref_of(body)
    async with state.record(ref).lock:
        async with state.gate.slot(urgent=True):
            await state.backend.uninstall(release_name(ref.kind, ref.name), ref.namespace)
        logger.info(f"uninstalled release {release_name(ref.kind, ref.name)}")
    state.forget(ref)


async def _converge_release(ref: Ref, record: Record, current: Plan, state: OperatorState, logger,
                            force: bool) -> HelmFailure | MirrorFailure | None:
    """Helm, when the values differ from the last successful run; the failure that stands."""
    values = current.values
    if record.applied == values:
        return None
    if not force and state.backoff.blocked(ref):
        return record.failure
    if problem := await _mirror_problem(values):
        record.failure = MirrorFailure(problem, state.backoff.fail(ref))
        logger.warning(record.failure.describe())
        return record.failure
    async with state.gate.slot(urgent=record.applied is not _UNSET):
        return await _run_helm(ref, record, current, state, logger)


async def _run_helm(ref: Ref, record: Record, current: Plan, state: OperatorState, logger) -> HelmFailure | None:
    values = current.values
    if record.applied is _UNSET and values is not None and not record.created \
            and await _already_deployed(ref, current, state, logger):
        _succeeded(ref, record, values, state)
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
        record.failure = HelmFailure(command, message, state.backoff.fail(ref))
        if record.applied is not _GONE:
            record.applied = _UNSET
        logger.warning(record.failure.describe())
        return record.failure
    _succeeded(ref, record, values, state)
    return None


async def _mirror_problem(values) -> str | None:
    """Why a Hosted ModelAPI cannot get its model from the platform's model mirror (None: it can,
    or it does not use one). The pod would fetch it anonymously unless it has credentials, so
    a refusal counts only without them."""
    hosted = (values or {}).get("hosted") or {}
    mirror = hosted.get("mirror") or {}
    if (values or {}).get("mode") != "Hosted" or not mirror.get("reference"):
        return None
    registry = parse_registry(mirror["registry"])
    problem = await manifest_problem(registry, hosted["model"], bool(mirror.get("insecure")),
                                     refused_ok=bool(mirror.get("secretName")))
    return missing_message(hosted["model"], registry, problem) if problem else None


def _succeeded(ref: Ref, record: Record, values, state: OperatorState) -> None:
    record.applied = copy.deepcopy(values)
    record.failure = None
    state.backoff.succeed(ref)


async def _already_deployed(ref: Ref, current: Plan, state: OperatorState, logger) -> bool:
    """First converge in this process (a start or restart): is the release already what the plan asks for?"""
    try:
        revision = await state.backend.deployed_revision(current.chart, current.release, ref.namespace, current.values)
    except Exception as error:  # the upgrade that follows retries and reports helm's trouble
        logger.info(f"release {current.release}: cannot compare with the deployed revision ({error}); upgrading")
        return False
    if revision is None:
        return False
    logger.info(f"release {current.release} is up to date (revision {revision})")
    return True

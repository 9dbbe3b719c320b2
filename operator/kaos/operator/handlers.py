"""kopf handlers for Agent, ModelAPI and MCPServer (kaos.api: kaos.tools/v1alpha1).

- indices keep the last seen state of every KAOS resource and the replica counts of the
  Deployments the workload charts create; a watch event of either wakes the status pass of
  the resource it concerns and of the resources depending on it (kaos.operator.wakeups);
- create/update/resume converge at once (helm upgrade --install, at most helm_concurrency at
  once) and retry helm failures with backoff; delete runs helm uninstall behind the
  finalizer; none of them writes status;
- a status pass per resource (a kopf timer that waits to be woken, or for its jittered resync
  period) re-plans from the indices when they changed, so a dependent follows its ModelAPI,
  MCP servers and peers (whatever the order of creation), and is the one writer of status
  (kaos.operator.status). At rest it neither runs helm nor calls the API.
"""

from __future__ import annotations

import logging

import kopf

from kaos.api import FINALIZER, GROUP, MEMORYSTORE, MEMORYSTORE_NAMES, PLURALS, VERSION
from kaos.backoff import Backoff
from kaos.helm import Helm, HelmError
from kaos.mcp_discovery import ToolDiscovery, discover_tools
from kaos.operator.drift import RELEASE_LABELS, RENDERED_KINDS, object_key, suspect
from kaos.operator.reconciler import OperatorState, converge, uninstall
from kaos.operator.status import write_status
from kaos.operator.wakeups import resync_period
from kaos.operator.world import PART_OF_LABEL, World, deployment_key, indexed, plain, replica_counts
from kaos.reconcile import AGENT, MCPSERVER, MODELAPI, ref_of
from kaos.settings import Settings

# Replaced by tests: to record helm calls instead of running against a cluster, and to keep
# MCP tool discovery on loopback addresses.
backend_factory = Helm
tools_discoverer = discover_tools


LAST_HANDLED = f"{GROUP}/last-handled-configuration"  # kopf's diff base (AnnotationsDiffBaseStorage)


def _resync_seconds() -> float:
    try:
        return Settings.from_env().resync_seconds
    except ValueError:
        return Settings().resync_seconds


class QuietTimers(logging.Filter):
    """Drop kopf's "Timer ... succeeded." line (and its k8s Event) for every status pass, and its
    "Handler 'wake' succeeded." and "Handler 'drift' succeeded." for every watch event (an API
    request each)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not (message.endswith(" succeeded.") and message.startswith(("Timer ", "Handler 'wake'", "Handler 'drift'")))


DAEMON_EXIT_POLL_SECONDS = 1.0


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, memo: kopf.Memo, logger, **_) -> None:
    try:
        kaos_settings = Settings.from_env()
    except ValueError as error:
        raise kopf.PermanentError(f"invalid operator settings: {error}") from None
    settings.persistence.finalizer = FINALIZER
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=GROUP)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(prefix=GROUP)
    # A resource deleted while its timer's pass is running keeps its finalizer until kopf sees the
    # pass end; kopf looks again after this many seconds (60 by default: a `kubectl delete` of a
    # Trigger under load waited a minute in CI).
    settings.background.cancellation_polling = DAEMON_EXIT_POLL_SECONDS
    objects_logger = logging.getLogger("kopf.objects")
    if not any(isinstance(f, QuietTimers) for f in objects_logger.filters):
        objects_logger.addFilter(QuietTimers())
    memo.kaos = OperatorState(
        settings=kaos_settings,
        backend=backend_factory(kaos_settings),
        backoff=Backoff(base=kaos_settings.helm_retry_seconds),
        tools=ToolDiscovery(Backoff(base=kaos_settings.helm_retry_seconds), list_tools=tools_discoverer),
    )
    logger.info(
        f"KAOS operator: charts in {kaos_settings.charts_dir}, "
        f"watching {', '.join(kaos_settings.watch_namespaces) or 'all namespaces'}"
    )


# The indices and the watch events are async functions: kopf runs a plain function in a thread.

def _index_of(kind: str):
    async def index(body, **_):
        return {ref_of({**body, "kind": kind}): indexed(body)}

    return index


agent_index = kopf.index(GROUP, VERSION, PLURALS[AGENT], id="agent_index")(_index_of(AGENT))
modelapi_index = kopf.index(GROUP, VERSION, PLURALS[MODELAPI], id="modelapi_index")(_index_of(MODELAPI))
mcpserver_index = kopf.index(GROUP, VERSION, PLURALS[MCPSERVER], id="mcpserver_index")(_index_of(MCPSERVER))
memorystore_index = kopf.index(GROUP, VERSION, MEMORYSTORE_NAMES.plural, id="memorystore_index")(_index_of(MEMORYSTORE))


@kopf.index("apps", "v1", "deployments", labels={PART_OF_LABEL: "kaos"})
async def deployment_index(body, **_):
    key = deployment_key(body)
    return {key: replica_counts(body)} if key else None


async def on_resource_event(body, memo, **_) -> None:
    """After kopf has indexed the event: the resource's status pass, and its dependents', may have work."""
    memo.kaos.wakeups.wake(ref_of(body), dependents=True)


@kopf.on.event("apps", "v1", "deployments", labels={PART_OF_LABEL: "kaos"}, id="wake")
async def on_deployment_event(body, memo, **_) -> None:
    key = deployment_key(body)
    if key is not None:
        memo.kaos.wakeups.wake(key)


async def on_rendered_event(body, type, memo, **kwargs) -> None:
    """An object of a release (a Service, a NetworkPolicy, an HTTPRoute...) was deleted or
    written: a suspect of drift when the deletion or the write was not helm's (kaos.operator.drift);
    the owner's status pass compares it with helm's manifest. A suspect's later events keep its
    copy current. The operator's own helm writes wake nothing."""
    owner = deployment_key(body)
    if owner is None or World.of(kwargs).get(owner) is None:  # not a resource's, or it is being deleted
        return
    record = memo.kaos.records.get(owner)
    known = record is not None and object_key(body) in record.suspects
    if not (known or suspect(type, body)):
        return
    memo.kaos.record(owner).suspects[object_key(body)] = None if type == "DELETED" else plain(body)
    memo.kaos.wakeups.wake(owner)


for _group, _version, _plural in RENDERED_KINDS:
    kopf.on.event(_group, _version, _plural, labels=RELEASE_LABELS, id="drift")(on_rendered_event)


def _world(kwargs) -> World:
    return World.of(kwargs)


async def on_change(body, memo, logger, reason=None, **kwargs) -> None:
    outcome = await converge(body, world=_world(kwargs), state=memo.kaos, logger=logger, force=True,
                             created=reason == kopf.Reason.CREATE)
    memo.kaos.wakeups.wake(ref_of(body))  # its status pass writes what came of it
    if outcome.failure is not None:
        raise kopf.TemporaryError(outcome.failure.describe(), delay=outcome.failure.delay)


async def on_resync(body, patch, memo, logger, **kwargs) -> None:
    if body.get("metadata", {}).get("deletionTimestamp"):
        return
    world = _world(kwargs)
    # Before kopf has recorded a handled spec, no change handler has applied a release of it.
    never_handled = LAST_HANDLED not in (body.get("metadata", {}).get("annotations") or {})
    outcome = await converge(body, world=world, state=memo.kaos, logger=logger, force=False, created=never_handled)
    await write_status(body, outcome, world=world, state=memo.kaos, patch=patch, logger=logger)


def _pause(ref, state: OperatorState) -> float:
    """How long the status pass of ``ref`` waits to be woken: a resync period, or one tick
    while a helm retry or a tool discovery is due (or until it is)."""
    tick = state.settings.resync_seconds
    record = state.records.get(ref)
    if record is None or record.outcome is None or record.outcome.failure is not None:
        return tick  # not converged yet (its change handler, under way, wakes it sooner), or failing
    if ref.kind == MCPSERVER and (state.tools.retry_due(ref) or state.tools.retry_in(ref) > 0):
        return max(tick, state.tools.retry_in(ref))
    return resync_period(state.settings.idle_resync_seconds)


async def on_tick(body, patch, memo, logger, stopped, **kwargs) -> None:
    """The status pass: wait to be woken (or the resync period), then converge and write status."""
    await memo.kaos.wakeups.wait(ref_of(body), _pause(ref_of(body), memo.kaos), stopped)
    if not stopped:
        await on_resync(body=body, patch=patch, memo=memo, logger=logger, **kwargs)


async def on_delete(body, memo, logger, **_) -> None:
    try:
        await uninstall(body, state=memo.kaos, logger=logger)
    except HelmError as error:
        raise kopf.TemporaryError(f"helm uninstall failed: {error}", delay=memo.kaos.settings.helm_retry_seconds)


for _plural in PLURALS.values():
    kopf.on.resume(GROUP, VERSION, _plural, id="reconcile")(on_change)
    kopf.on.create(GROUP, VERSION, _plural, id="reconcile")(on_change)
    kopf.on.update(GROUP, VERSION, _plural, id="reconcile")(on_change)
    kopf.on.delete(GROUP, VERSION, _plural, id="uninstall")(on_delete)
    kopf.on.event(GROUP, VERSION, _plural, id="wake")(on_resource_event)
    kopf.timer(GROUP, VERSION, _plural, id="resync", interval=_resync_seconds())(on_tick)


import kaos.operator.memorystore_handlers  # noqa: E402,F401  (registers the MemoryStore handlers)
import kaos.operator.trigger_handlers  # noqa: E402,F401  (registers the Trigger handlers)

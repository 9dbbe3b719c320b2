"""kopf handlers for Agent, ModelAPI and MCPServer (kaos.api: kaos.tools/v1alpha1).

- indices keep the last seen state of every KAOS resource and the replica counts of the
  Deployments the workload charts create;
- create/update/resume converge at once (helm upgrade --install) and retry helm failures
  with backoff; delete runs helm uninstall behind the finalizer; none of them writes status;
- a timer per resource re-plans from the indices when they changed, so a dependent follows
  its ModelAPI, MCP servers and peers (whatever the order of creation), and is the one
  writer of status (kaos.operator.status).
"""

from __future__ import annotations

import logging

import kopf

from kaos.api import FINALIZER, GROUP, MEMORYSTORE, MEMORYSTORE_NAMES, PLURALS, VERSION
from kaos.backoff import Backoff
from kaos.helm import Helm, HelmError
from kaos.mcp_discovery import ToolDiscovery, discover_tools
from kaos.operator.reconciler import OperatorState, converge, uninstall
from kaos.operator.status import write_status
from kaos.operator.world import PART_OF_LABEL, World, deployment_key, plain, replica_counts
from kaos.reconcile import AGENT, MCPSERVER, MODELAPI, ref_of
from kaos.settings import Settings

# Replaced by tests: to record helm calls instead of running against a cluster, and to keep
# MCP tool discovery on loopback addresses.
backend_factory = Helm
tools_discoverer = discover_tools


def _resync_seconds() -> float:
    try:
        return Settings.from_env().resync_seconds
    except ValueError:
        return Settings().resync_seconds


class QuietTimers(logging.Filter):
    """Drop kopf's "Timer ... succeeded." line (and its k8s Event) for every resync tick."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not (message.startswith("Timer ") and message.endswith(" succeeded."))


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, memo: kopf.Memo, logger, **_) -> None:
    try:
        kaos_settings = Settings.from_env()
    except ValueError as error:
        raise kopf.PermanentError(f"invalid operator settings: {error}") from None
    settings.persistence.finalizer = FINALIZER
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=GROUP)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(prefix=GROUP)
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


def _index_of(kind: str):
    def index(body, **_):
        return {ref_of({**body, "kind": kind}): plain(body)}

    return index


agent_index = kopf.index(GROUP, VERSION, PLURALS[AGENT], id="agent_index")(_index_of(AGENT))
modelapi_index = kopf.index(GROUP, VERSION, PLURALS[MODELAPI], id="modelapi_index")(_index_of(MODELAPI))
mcpserver_index = kopf.index(GROUP, VERSION, PLURALS[MCPSERVER], id="mcpserver_index")(_index_of(MCPSERVER))
memorystore_index = kopf.index(GROUP, VERSION, MEMORYSTORE_NAMES.plural, id="memorystore_index")(_index_of(MEMORYSTORE))


@kopf.index("apps", "v1", "deployments", labels={PART_OF_LABEL: "kaos"})
def deployment_index(body, **_):
    key = deployment_key(body)
    return {key: replica_counts(body)} if key else None


def _world(kwargs) -> World:
    return World.of(kwargs)


async def on_change(body, memo, logger, **kwargs) -> None:
    outcome = await converge(body, world=_world(kwargs), state=memo.kaos, logger=logger, force=True)
    if outcome.failure is not None:
        raise kopf.TemporaryError(outcome.failure.describe(), delay=outcome.failure.delay)


async def on_resync(body, patch, memo, logger, **kwargs) -> None:
    if body.get("metadata", {}).get("deletionTimestamp"):
        return
    world = _world(kwargs)
    outcome = await converge(body, world=world, state=memo.kaos, logger=logger, force=False)
    await write_status(body, outcome, world=world, state=memo.kaos, patch=patch, logger=logger)


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
    kopf.timer(GROUP, VERSION, _plural, id="resync", interval=_resync_seconds())(on_resync)


import kaos.operator.memorystore_handlers  # noqa: E402,F401  (registers the MemoryStore handlers)
import kaos.operator.trigger_handlers  # noqa: E402,F401  (registers the Trigger handlers)

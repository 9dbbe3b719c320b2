"""kopf handlers for Trigger (kaos.operator.trigger_host runs them): startup and cleanup of the
engine and its webhook server (kaos.operator.trigger_webhooks), each Trigger's changes, and a
timer per Trigger that refreshes its status and starts the runs its run-now annotation asks for."""

from __future__ import annotations

import aiohttp.web
import kopf

from kaos.api import GROUP, TRIGGER_NAMES, VERSION
from kaos.kube_api import KubeClient
from kaos.operator.trigger_host import ClusterTriggerHost
from kaos.operator.trigger_webhooks import webhook_app
from kaos.operator.world import World
from kaos.settings import Settings

PLURAL = TRIGGER_NAMES.plural

# Replaced by tests: how the operator reaches the Kubernetes API outside kopf.
api_factory = KubeClient.login


@kopf.on.startup()
async def start_triggers(memo: kopf.Memo, logger, **_) -> None:
    memo.trigger_host = ClusterTriggerHost(await api_factory())
    settings = Settings.from_env()
    memo.trigger_webhooks = None
    if settings.trigger_port:
        runner = aiohttp.web.AppRunner(webhook_app(memo.trigger_host.engine), access_log=None)
        await runner.setup()
        await aiohttp.web.TCPSite(runner, settings.health_host, settings.trigger_port).start()
        memo.trigger_webhooks = runner
        logger.info(f"Trigger webhooks on {settings.health_host}:{settings.trigger_port}")


@kopf.on.cleanup()
async def stop_triggers(memo: kopf.Memo, **_) -> None:
    if getattr(memo, "trigger_webhooks", None) is not None:
        await memo.trigger_webhooks.cleanup()
    if getattr(memo, "trigger_host", None) is not None:
        await memo.trigger_host.close()


def _world(kwargs) -> World:
    return World(kwargs["agent_index"], kwargs["modelapi_index"], kwargs["mcpserver_index"], kwargs["deployment_index"])


@kopf.on.resume(GROUP, VERSION, PLURAL, id="trigger")
@kopf.on.create(GROUP, VERSION, PLURAL, id="trigger")
@kopf.on.update(GROUP, VERSION, PLURAL, id="trigger", field="spec")
async def on_trigger(body, memo, **kwargs) -> None:
    memo.trigger_host.world = _world(kwargs)
    memo.trigger_host.apply(body)


@kopf.on.delete(GROUP, VERSION, PLURAL, id="trigger", optional=True)
async def on_trigger_deleted(body, memo, **_) -> None:
    memo.trigger_host.delete(body)


def _resync_seconds() -> float:
    try:
        return Settings.from_env().resync_seconds
    except ValueError:
        return Settings().resync_seconds


@kopf.timer(GROUP, VERSION, PLURAL, id="trigger-status", interval=_resync_seconds())
async def on_trigger_tick(body, memo, **kwargs) -> None:
    if (body.get("metadata") or {}).get("deletionTimestamp"):
        return
    await memo.trigger_host.refresh(body, _world(kwargs))

"""kopf handlers for MemoryStore. It deploys nothing (the agents that name it reach the store),
so no release and no finalizer: a timer per MemoryStore, the one writer of its status as for the
other kinds (kaos.operator.status), resolves its ModelAPIs from the indices, reads the last
answer of its probe (kaos.memory_probe asks the store and the embedder in the background, bounded
and re-checked with jitter, so a tick never waits on them) and writes Ready or Degraded."""

from __future__ import annotations

import time

import kopf

from kaos import crds
from kaos.api import GROUP, MEMORYSTORE_NAMES, VERSION
from kaos.kube_api import KubeClient, KubeError, NotFound
from kaos.memory_probe import RECHECK_SECONDS, MemoryProbes
from kaos.operator.status import with_transition_times
from kaos.operator.world import World
from kaos.reconcile import cluster_endpoint_of, dependencies, ref_of
from kaos.reconcile.memorystore import FAILED, Resolution, memory_store_status, probe_target, resolve
from kaos.settings import Settings

PLURAL = MEMORYSTORE_NAMES.plural

# Replaced by tests: how the operator reaches the Kubernetes API outside kopf (Secrets).
api_factory = KubeClient.login


class SecretCache:
    """connectionSecretRef values, read at most once per RECHECK_SECONDS per key (a tick is every
    second): the value (None when the Secret or key is missing) and why it could not be read
    ("" when it could, or is missing), e.g. the API's "forbidden"."""

    def __init__(self, api: KubeClient):
        self.api = api
        self._values: dict[tuple[str, str, str], tuple[float, str | None, str]] = {}

    async def value(self, namespace: str, name: str, key: str) -> tuple[str | None, str]:
        entry = self._values.get((namespace, name, key))
        if entry is None or time.monotonic() - entry[0] > RECHECK_SECONDS:
            raw, problem = None, ""
            try:
                raw = await self.api.secret_value(namespace, name, key)
            except NotFound:
                pass
            except KubeError as error:
                problem = str(error)
            entry = (time.monotonic(), raw.decode(errors="replace") if raw is not None else None, problem)
            self._values[(namespace, name, key)] = entry
        return entry[1], entry[2]


@kopf.on.startup()
async def start_memory_probes(memo: kopf.Memo, settings: kopf.OperatorSettings, **_) -> None:
    memo.memory_probes = MemoryProbes(every=_settings().memory_probe_seconds)
    memo.memory_secrets = SecretCache(await api_factory())


@kopf.on.cleanup()
async def stop_memory_probes(memo: kopf.Memo, **_) -> None:
    if getattr(memo, "memory_probes", None) is not None:
        await memo.memory_probes.close()
    if getattr(memo, "memory_secrets", None) is not None:
        await memo.memory_secrets.api.close()


@kopf.on.delete(GROUP, VERSION, PLURAL, id="memorystore", optional=True)
async def on_memory_store_deleted(body, memo, **_) -> None:
    memo.memory_probes.forget(ref_of({**body, "kind": MEMORYSTORE_NAMES.kind}))


def _settings() -> Settings:
    try:
        return Settings.from_env()
    except ValueError:
        return Settings()


@kopf.timer(GROUP, VERSION, PLURAL, id="memorystore-status", interval=_settings().resync_seconds)
async def on_memory_store_tick(body, patch, memo, **kwargs) -> None:
    if (body.get("metadata") or {}).get("deletionTimestamp"):
        return
    settings = memo.kaos.settings
    resource = {**body, "kind": MEMORYSTORE_NAMES.kind}
    ref = ref_of(resource)
    try:
        resource = crds.validate(dict(resource), settings.crd_dir, unknown_fields=True)
    except (crds.ValidationError, OSError) as invalid:
        resolution = Resolution(FAILED, f"{ref}: {invalid}")
    else:
        world = World.of(kwargs)
        observed = {dependency: world.get(dependency) for dependency in dependencies(resource)}
        resolution = resolve(resource, observed, settings, cluster_endpoint_of(settings, observed))
    probe = None
    if not resolution.phase:
        secret = resolution.spec.secret
        value, unreadable = await memo.memory_secrets.value(ref.namespace, secret.name, secret.key) \
            if secret else (None, "")
        # "": the operator cannot check an embedded file inside an agent's pod (it checks the
        # platform's PostgreSQL, where local stores live when the platform chart deploys one)
        probe = memo.memory_probes.known(ref, probe_target(resolution, "", value, unreadable,
                                                           settings.memory_postgres_url))
    desired = memory_store_status(resource, resolution, probe)
    live = dict(body.get("status") or {})
    for key, value in with_transition_times(live, desired).items():
        if live.get(key) != value:
            patch.status[key] = value

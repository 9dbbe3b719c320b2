"""A MemoryStore as the control planes use it: its spec parsed once into a typed view, what it
depends on, where its models are reached, and its status from the last probe (pure, no I/O).

The CRD schema (charts/kaos/files/crds/memorystore.yaml) validates the shape and applies the
defaults; ``memory_store_spec`` takes such a validated resource. A MemoryStore deploys nothing:
the agents that name it (spec.memory.store) reach the store and its embedder themselves, with
the env ``long_term_memory_values`` (kaos.reconcile.values) gives them. Its status says whether
the store and the embedder answer (kaos.memory_probe asks them); when one does not it is
Degraded with the condition MemoryDegraded, and the agents keep answering without long-term
memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from kaos.api import MEMORYSTORE, MODELAPI, SecretKey, label_problem, name_problems, secret_key
from kaos.reconcile.endpoints import EndpointOf, endpoint
from kaos.reconcile.refs import Ref, dependencies, ref_of

PENDING, WAITING, READY, DEGRADED, FAILED = "Pending", "Waiting", "Ready", "Degraded", "Failed"
LOCAL, EXTERNAL = "local", "external"
USER, AGENT_SCOPE, NAMESPACE_SCOPE = "user", "agent", "namespace"
# Where an agent in a cluster keeps the embedded store when the platform names no folder.
CLUSTER_EMBEDDED_DIR = "/tmp/kaos-memory"
DEGRADED_CONDITION = "MemoryDegraded"


class MemoryStoreSpecError(ValueError):
    """A MemoryStore that cannot be used as written; the message names the field."""


@dataclass(frozen=True)
class ModelRef:
    model_api: str
    model: str


@dataclass(frozen=True)
class MemoryStoreSpec:
    namespace: str
    name: str
    storage: str  # local | external
    url: str  # external, given as a value (no password)
    secret: SecretKey | None  # external, the URL from a Secret key
    embedding: ModelRef
    summarization: ModelRef | None
    scope: str
    retention_days: int
    top_k: int

    @property
    def collection(self) -> str:
        """The name the runtime keeps this store's memories under: unique per namespace and name."""
        return f"{self.namespace}-{self.name}"


def memory_store_spec(resource: Mapping[str, Any]) -> MemoryStoreSpec:
    """The spec of a validated MemoryStore (CRD defaults applied)."""
    ref = ref_of(resource)
    problems = name_problems(MEMORYSTORE, ref.namespace, ref.name)
    if problems:
        raise MemoryStoreSpecError("; ".join(problems))
    spec = resource.get("spec") or {}
    storage = spec.get("storage") or {}
    kind = storage.get("type") or LOCAL
    external = storage.get("external") or {}
    secret = external.get("connectionSecretRef")
    if kind == EXTERNAL and bool(external.get("url")) == bool(secret):
        raise MemoryStoreSpecError("spec.storage.external needs exactly one of url and connectionSecretRef")
    models = spec.get("models") or {}
    return MemoryStoreSpec(
        namespace=ref.namespace,
        name=ref.name,
        storage=kind,
        url=external.get("url") or "" if kind == EXTERNAL else "",
        secret=secret_key(secret) if kind == EXTERNAL else None,
        embedding=_model_ref(models.get("embedding"), "spec.models.embedding"),
        summarization=_model_ref(models["summarization"], "spec.models.summarization")
        if models.get("summarization") else None,
        scope=spec.get("scope") or USER,
        retention_days=int(spec.get("retentionDays") or 0),
        top_k=int(spec.get("topK") or 5),
    )


def _model_ref(entry: Mapping[str, Any] | None, field: str) -> ModelRef:
    if not entry or not entry.get("model"):
        raise MemoryStoreSpecError(f"{field} needs a modelAPI and a model")
    problem = label_problem(f"{field}.modelAPI", entry.get("modelAPI"))
    if problem:
        raise MemoryStoreSpecError(problem)
    return ModelRef(entry["modelAPI"], entry["model"])


def local_url(spec: MemoryStoreSpec, directory: str, platform_url: str) -> str:
    """Where a store with storage.type local keeps its memories: the platform's PostgreSQL
    (``platform_url``, the platform chart's memory.postgres) when it has one, shared by every
    such store (one table per collection), else the embedded file (``embedded_url``)."""
    return platform_url or embedded_url(spec, directory)


def embedded_url(spec: MemoryStoreSpec, directory: str) -> str:
    """The sqlite URL of the embedded store, one file per MemoryStore in the absolute ``directory``:
    ``sqlite://`` and the file's absolute path (``sqlite:///tmp/kaos-memory/team-facts.db``)."""
    return f"sqlite://{(directory or CLUSTER_EMBEDDED_DIR).rstrip('/')}/{spec.collection}.db"


@dataclass(frozen=True)
class Resolution:
    """What a MemoryStore resolves to before it is probed: Failed or Waiting with a message, or
    the URLs of its models (phase empty)."""

    phase: str
    message: str
    embedding_url: str = ""
    summarization_url: str = ""
    spec: MemoryStoreSpec | None = None


def resolve(resource: Mapping[str, Any], observed: Mapping[Ref, Mapping[str, Any] | None],
            settings, endpoint_of: EndpointOf) -> Resolution:
    """The spec and the URLs of its ModelAPIs, resolved the way an Agent's ModelAPI is; Waiting
    while one is missing or not ready, Failed when the spec cannot be used."""
    ref = ref_of(resource)
    try:
        spec = memory_store_spec(resource)
    except MemoryStoreSpecError as error:
        return Resolution(FAILED, f"{ref}: {error}")
    missing = [r for r in dependencies(resource) if not ((observed.get(r) or {}).get("status") or {}).get("ready")]
    if missing:
        reasons = ", ".join(f"{r} ({'not found' if observed.get(r) is None else 'not ready'})" for r in missing)
        return Resolution(WAITING, f"waiting for {reasons}", spec=spec)

    def url(model: ModelRef) -> str:
        return endpoint(observed[Ref(MODELAPI, spec.namespace, model.model_api)], settings, endpoint_of)

    return Resolution("", "", url(spec.embedding), url(spec.summarization) if spec.summarization else "", spec)


@dataclass(frozen=True)
class ProbeTarget:
    """What kaos.memory_probe asks: the store (a postgresql:// URL, a sqlite:/// file whose folder
    must be writable, or "" when the control plane cannot reach it: an embedded file in an agent's
    pod) and the embedder. ``store_problem``: why the store cannot even be asked (a missing Secret)."""

    store_url: str
    embedding_url: str
    embedding_model: str
    store_problem: str = ""


def probe_target(resolution: Resolution, directory: str, secret_value: str | None,
                 secret_unreadable: str = "", platform_url: str = "") -> ProbeTarget:
    """The target of a resolved store. ``directory``: where the control plane keeps embedded
    files it can check (``kaos up``), "" when it cannot (a cluster); ``platform_url``: the
    platform's PostgreSQL, where local stores live when it is set; ``secret_value``: the URL
    read from spec.storage.external.connectionSecretRef, None when the Secret or key is missing;
    ``secret_unreadable``: why the Secret could not be read (e.g. forbidden), "" when it could."""
    spec = resolution.spec
    problem = ""
    if spec.storage == EXTERNAL:
        url = spec.url or secret_value or ""
        if spec.secret and secret_unreadable:
            problem = f"cannot read {secret_unreadable} (spec.storage.external.connectionSecretRef)"
        elif spec.secret and secret_value is None:
            problem = f"Secret {spec.secret.name!r} has no key {spec.secret.key!r} (spec.storage.external.connectionSecretRef)"
    else:
        url = platform_url or (embedded_url(spec, directory) if directory else "")
    return ProbeTarget(url, resolution.embedding_url, spec.embedding.model, problem)


@dataclass(frozen=True)
class Probe:
    """What the store and the embedder answered when last asked: an empty message when one
    answered, else why not."""

    store: str
    embedder: str

    @property
    def healthy(self) -> bool:
        return not self.store and not self.embedder


def memory_store_status(resource: Mapping[str, Any], resolution: Resolution, probe: Probe | None) -> dict[str, Any]:
    """The status to write: Failed and Waiting from the resolution, else Pending until the first
    probe, then Ready or Degraded (with MemoryDegraded naming which of the two did not answer)."""
    ref = ref_of(resource)
    generation = (resource.get("metadata") or {}).get("generation")
    phase, message = resolution.phase or PENDING, resolution.message
    if not resolution.phase:
        if probe is None:
            message = "checking the store and the embedder"
        elif probe.healthy:
            phase, message = READY, ""
        else:
            phase = DEGRADED
            message = "; ".join(filter(None, [probe.store and f"store: {probe.store}",
                                              probe.embedder and f"embedder: {probe.embedder}"]))
            message += "; agents answer without long-term memory until it answers again"
    status: dict[str, Any] = {"phase": phase, "ready": phase == READY, "message": message}
    if generation is not None:
        status["observedGeneration"] = generation
    if resolution.spec is not None:
        status["collection"] = resolution.spec.collection
    if resolution.embedding_url:
        status["embedding"] = {"url": resolution.embedding_url, "model": resolution.spec.embedding.model}
    if resolution.summarization_url:
        status["summarization"] = {"url": resolution.summarization_url, "model": resolution.spec.summarization.model}
    status["conditions"] = [
        _condition("Ready", phase == READY, phase, message or f"{ref} is ready"),
        _condition(DEGRADED_CONDITION, phase == DEGRADED, "Unreachable" if phase == DEGRADED else "Reachable",
                   message if phase == DEGRADED else "the store and the embedder answer" if phase == READY
                   else "not probed yet"),
    ]
    return status


def _condition(kind: str, true: bool, reason: str, message: str) -> dict[str, str]:
    return {"type": kind, "status": "True" if true else "False", "reason": reason, "message": message}


def usable(store: Mapping[str, Any] | None) -> bool:
    """An Agent can deploy with this store: it was resolved and probed, Ready or Degraded (a
    degraded store leaves the agent answering without long-term memory, never waiting)."""
    status = (store or {}).get("status") or {}
    return status.get("phase") in (READY, DEGRADED) and bool((status.get("embedding") or {}).get("url"))

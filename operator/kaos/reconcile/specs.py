"""Agents, ModelAPIs and MCPServers as the reconcile core uses them: each spec parsed once into a
typed view, so that every rule on a field has one owner (is the agent exposed, which peers and
A2A agents it reaches, which entries its approval gates, whether its auth guards it).

Like ``kaos.triggers.spec`` and ``kaos.reconcile.memorystore``, a parse function takes a validated
resource (the CRD's defaults applied, by the API server or ``kaos.crds``); it checks nothing the
CRD checks and raises nothing: what only code can check is the planner's (kaos.reconcile.plan).
Parts the charts take as written (env, resources, the auth block, access rules) stay mappings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from kaos.api import AGENT, namespace_of
from kaos.reconcile.approval_entries import approval_entry
from kaos.reconcile.hosted import engine

PYTHON_STRING = "python-string"


@dataclass(frozen=True)
class Container:
    """spec.container: the image (None: the platform's), and what the chart copies as written."""
    image: str | None = None
    command: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    env: tuple[Mapping[str, Any], ...] = ()
    resources: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Scale:
    """spec.replicas or spec.autoscaling (the CRD allows one at most)."""
    replicas: int | None = None  # None: the chart's default, one
    autoscaling: Mapping[str, Any] | None = None

    @property
    def most(self) -> int:
        """The most replicas that can run at once."""
        if self.autoscaling:
            return self.autoscaling["maxReplicas"]
        return 1 if self.replicas is None else self.replicas


@dataclass(frozen=True)
class Auth:
    """spec.auth. ``guarded``: KAOS asks callers for credentials (API keys or an OIDC issuer)."""
    block: Mapping[str, Any] = field(default_factory=dict)  # as the charts take it

    @property
    def guarded(self) -> bool:
        return bool(self.block.get("apiKeys") or self.block.get("oidc"))

    @property
    def oidc(self) -> bool:
        return bool(self.block.get("oidc"))

    @property
    def admins(self) -> tuple[str, ...]:
        return tuple(self.block.get("admins") or ())

    def __bool__(self) -> bool:
        return bool(self.block)


@dataclass(frozen=True)
class Network:
    """agentNetwork: whether the agent is exposed (a gateway route, an endpoint, reachable as a
    peer), and whom it reaches: peer Agents by name, A2A agents by URL."""
    expose: bool = True
    access: tuple[str, ...] = ()

    @property
    def peers(self) -> tuple[str, ...]:
        """The peer Agents, by name, each once."""
        return _unique(entry for entry in self.access if not is_url(entry))

    @property
    def a2a_urls(self) -> tuple[str, ...]:
        """The A2A agents named by URL, each once: no dependency, the runtime fetches their cards."""
        return _unique(entry for entry in self.access if is_url(entry))


@dataclass(frozen=True)
class Approval:
    """spec.approval: ``tools`` entries are a tool's name, ``*``, ``mcp:<server>``, ``peer:<agent>``
    or ``peer:*`` (approval_entry, the runtime's grammar); ``block`` as the chart takes it."""
    tools: tuple[str, ...] = ()
    approvers: tuple[str, ...] = ()
    block: Mapping[str, Any] = field(default_factory=dict)

    @property
    def targets(self) -> tuple[tuple[str, str], ...]:
        """The entries that name a server or a peer, as (``mcp`` or ``peer``, the name), in order.
        ValueError for an entry the runtime would refuse (the CRD's pattern refuses it first)."""
        return tuple(target for target in map(approval_entry, self.tools) if target[0] != "tool")


@dataclass(frozen=True)
class Memory:
    """spec.memory (where sessions live, the store) and config.memory (the bounds)."""
    backend: str = ""  # "": the platform's (settings.memory_backend)
    redis_url: str = ""
    redis_url_from: Mapping[str, Any] = field(default_factory=dict)  # valueFrom
    ttl_seconds: int = 0
    compaction: Mapping[str, Any] | None = None
    store: str = ""  # a MemoryStore's name
    bounds: Mapping[str, Any] = field(default_factory=dict)  # config.memory

    def backend_or(self, platform: str) -> str:
        return self.backend or platform

    @property
    def remembers(self) -> bool:
        return self.bounds.get("enabled", True)

    @property
    def redis_secret_ref(self) -> Mapping[str, Any]:
        return self.redis_url_from.get("secretKeyRef") or {}


@dataclass(frozen=True)
class AgentSpec:
    name: str
    namespace: str
    model_api: str
    model: str  # spec.model ("": none)
    model_id: str  # spec.model, or a literal MODEL_NAME env entry; "" when unknown
    names_model: bool  # spec.model or a MODEL_NAME entry (one set with valueFrom names one unknown here)
    mcp_servers: tuple[str, ...]
    network: Network
    memory: Memory
    auth: Auth
    access: tuple[Mapping[str, Any], ...]  # spec.access's rules
    approval: Approval | None
    scale: Scale
    container: Container
    config: Mapping[str, Any]  # spec.config: description, instructions, env, telemetry, ...
    budget: Mapping[str, Any]
    gateway_route: Mapping[str, Any]
    wait_for_dependencies: bool = True

    @property
    def env(self) -> list[Mapping[str, Any]]:
        """config.env then container.env, as the chart's ``env``."""
        return [*(self.config.get("env") or ()), *self.container.env]


@dataclass(frozen=True)
class ModelAPISpec:
    name: str
    namespace: str
    mode: str  # Proxy | Hosted
    proxy: Mapping[str, Any]  # spec.proxyConfig
    hosted_model: str
    auth: Auth
    scale: Scale
    container: Container
    gateway_route: Mapping[str, Any]
    budget: Mapping[str, Any]
    tool_calling: str
    raw: Mapping[str, Any]  # the spec, for kaos.reconcile.hosted and kaos.reconcile.models

    @property
    def hosted(self) -> bool:
        return self.mode == "Hosted"

    def engine(self, settings) -> str:
        """A Hosted ModelAPI's engine (kaos.reconcile.hosted.engine) on this platform."""
        return engine(self.raw, bool(settings.hosted_registry))


@dataclass(frozen=True)
class MCPServerSpec:
    name: str
    namespace: str
    runtime: str
    url: str  # an external server's: KAOS deploys nothing
    params: str
    identity: str
    service_account_name: str
    auth: Auth
    scale: Scale
    container: Container
    gateway_route: Mapping[str, Any]


def agent_spec(resource: Mapping[str, Any]) -> AgentSpec:
    """The spec of a validated Agent (CRD defaults applied)."""
    (namespace, name), spec = _named(resource), resource.get("spec") or {}
    network = spec.get("agentNetwork") or {}
    config = spec.get("config") or {}
    container = _container(spec)
    names_model, model_id = _model(spec.get("model"), [*(config.get("env") or ()), *container.env])
    approval = spec.get("approval")
    return AgentSpec(
        name=name,
        namespace=namespace,
        model_api=spec.get("modelAPI") or "",
        model=spec.get("model") or "",
        model_id=model_id,
        names_model=names_model,
        mcp_servers=tuple(spec.get("mcpServers") or ()),
        network=Network(expose=network.get("expose", True), access=tuple(network.get("access") or ())),
        memory=_memory(spec.get("memory") or {}, config.get("memory") or {}),
        auth=Auth(spec.get("auth") or {}),
        access=tuple(spec.get("access") or ()),
        approval=Approval(tuple(approval.get("tools") or ()), tuple(approval.get("approvers") or ()), approval)
        if approval else None,
        scale=_scale(spec),
        container=container,
        config=config,
        budget=spec.get("budget") or {},
        gateway_route=spec.get("gatewayRoute") or {},
        wait_for_dependencies=spec.get("waitForDependencies", True),
    )


def modelapi_spec(resource: Mapping[str, Any]) -> ModelAPISpec:
    """The spec of a validated ModelAPI (CRD defaults applied)."""
    (namespace, name), spec = _named(resource), resource.get("spec") or {}
    return ModelAPISpec(
        name=name,
        namespace=namespace,
        mode=spec.get("mode", "Proxy"),
        proxy=spec.get("proxyConfig") or {},
        hosted_model=(spec.get("hostedConfig") or {}).get("model") or "",
        auth=Auth(spec.get("auth") or {}),
        scale=_scale(spec),
        container=_container(spec),
        gateway_route=spec.get("gatewayRoute") or {},
        budget=spec.get("budget") or {},
        tool_calling=spec.get("toolCalling") or "",
        raw=spec,
    )


def mcpserver_spec(resource: Mapping[str, Any]) -> MCPServerSpec:
    """The spec of a validated MCPServer (CRD defaults applied)."""
    (namespace, name), spec = _named(resource), resource.get("spec") or {}
    return MCPServerSpec(
        name=name,
        namespace=namespace,
        runtime=spec.get("runtime") or PYTHON_STRING,
        url=spec.get("url") or "",
        params=spec.get("params") or "",
        identity=spec.get("identity") or "",
        service_account_name=spec.get("serviceAccountName") or "",
        auth=Auth(spec.get("auth") or {}),
        scale=_scale(spec),
        container=_container(spec),
        gateway_route=spec.get("gatewayRoute") or {},
    )


def exposed(resource: Mapping[str, Any]) -> bool:
    """Whether a resource is reachable from outside its pods' peers: every ModelAPI and MCPServer;
    an Agent unless agentNetwork.expose is false (no route, no endpoint, no peer may name it)."""
    return resource.get("kind") != AGENT or agent_spec(resource).network.expose


def is_url(entry: str) -> bool:
    """An ``agentNetwork.access`` entry that is the URL of an A2A agent rather than an Agent's name."""
    return entry.startswith(("http://", "https://"))


def _named(resource: Mapping[str, Any]) -> tuple[str, str]:
    metadata = resource.get("metadata") or {}
    return namespace_of(metadata), metadata["name"]


def _model(model: str | None, env: list[Mapping[str, Any]]) -> tuple[bool, str]:
    """(names a model, its id when known): spec.model, else the last MODEL_NAME entry of the env
    (config.env, then container.env); one set with valueFrom is present but unknown."""
    if model:
        return True, model
    found = (False, "")
    for entry in env:
        if entry.get("name") != "MODEL_NAME":
            continue
        if entry.get("value"):
            found = (True, entry["value"])
        elif entry.get("valueFrom"):
            found = (True, "")
    return found


def _memory(memory: Mapping[str, Any], bounds: Mapping[str, Any]) -> Memory:
    url = (memory.get("redis") or {}).get("url") or {}
    return Memory(
        backend=memory.get("backend") or "",
        redis_url=url.get("value") or "",
        redis_url_from=url.get("valueFrom") or {},
        ttl_seconds=memory.get("ttlSeconds") or 0,
        compaction=memory["compaction"] if "compaction" in memory else None,
        store=memory.get("store") or "",
        bounds=bounds,
    )


def _scale(spec: Mapping[str, Any]) -> Scale:
    return Scale(spec["replicas"] if "replicas" in spec else None, spec.get("autoscaling") or None)


def _container(spec: Mapping[str, Any]) -> Container:
    container = spec.get("container") or {}
    return Container(
        image=container.get("image") or None,
        command=tuple(container.get("command") or ()),
        args=tuple(container.get("args") or ()),
        env=tuple(container.get("env") or ()),
        resources=container.get("resources") or {},
    )


def _unique(entries) -> tuple[str, ...]:
    return tuple(dict.fromkeys(entries))

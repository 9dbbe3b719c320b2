"""plan(): validate a resource, resolve its dependencies, and compute its chart values."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from kaos.api import name_problems
from kaos.reconcile.endpoints import EndpointOf, endpoint
from kaos.reconcile.hosted import EMBEDDINGS, LLAMACPP, OLLAMA, HostedConfigError, gguf, mirror, ollama_gguf
from kaos.reconcile.memorystore import MemoryStoreSpecError, memory_store_spec, usable
from kaos.reconcile.models import (
    ModelConfigError,
    admitted,
    config_yaml_model_names,
    offered_models,
    sole_model,
)
from kaos.reconcile.refs import (
    AGENT,
    CHART_OF,
    MCPSERVER,
    MEMORYSTORE,
    MODELAPI,
    Ref,
    agent_dependencies,
    ref_of,
    release_name,
)
from kaos.reconcile.specs import (
    PYTHON_STRING,
    AgentSpec,
    Auth,
    MCPServerSpec,
    ModelAPISpec,
    agent_spec,
    exposed,
    mcpserver_spec,
    modelapi_spec,
)
from kaos.reconcile.values import agent_values, long_term_memory_values, mcpserver_values, modelapi_values

FAILED, WAITING, DEPLOY = "Failed", "Waiting", "Deploy"
BUILTIN_MCP_RUNTIMES = (PYTHON_STRING, "custom")


@dataclass(frozen=True)
class Plan:
    phase: str  # Failed | Waiting | Deploy
    message: str
    chart: str
    release: str
    values: dict[str, Any] | None  # None: nothing to deploy
    endpoint: str
    dependencies_ready: bool = True
    not_ready: tuple[Ref, ...] = field(default=())


def failed_plan(ref: Ref, message: str) -> Plan:
    """The plan of a resource that cannot be planned at all (its CRD rejects it): Failed,
    nothing to deploy, no endpoint."""
    return Plan(FAILED, message, CHART_OF[ref.kind], release_name(ref.kind, ref.name), None, "")


class _Invalid(Exception):
    """The resource cannot be deployed as written; the message says what to change."""


def plan(
    resource: Mapping[str, Any],
    observed: Mapping[Ref, Mapping[str, Any] | None],
    settings,
    endpoint_of: EndpointOf,
) -> Plan:
    ref = ref_of(resource)
    bad_names = name_problems(ref.kind, ref.namespace, ref.name)
    if bad_names:  # the API server checks names too; a plan trusts none it did not check
        return failed_plan(ref, f"{ref}: " + "; ".join(bad_names))
    chart, release = CHART_OF[ref.kind], release_name(ref.kind, ref.name)
    own_endpoint = endpoint(resource, settings, endpoint_of)

    def make(phase, message, values=None, **extra) -> Plan:
        return Plan(phase, message, chart, release, values, own_endpoint, **extra)

    try:
        if ref.kind == MODELAPI:
            modelapi = modelapi_spec(resource)
            _check_modelapi_auth(modelapi, settings)
            return make(DEPLOY, "", _modelapi(modelapi, settings))
        if ref.kind == MCPSERVER:
            server = mcpserver_spec(resource)
            _check_mcpserver_auth(server, settings)
            if server.url:
                return make(DEPLOY, f"external MCP server at {server.url}; nothing deployed")
            return make(DEPLOY, "", _mcpserver(server, settings))
        agent = agent_spec(resource)
        _check_agent_auth(agent, settings)
        return _agent(agent, observed, settings, endpoint_of, make)
    except _Invalid as invalid:
        return make(FAILED, f"{ref}: {invalid}")


REQUIRED = "the platform requires authentication (auth.required)"


def _check_agent_auth(agent: AgentSpec, settings) -> None:
    """spec.auth only where KAOS can enforce it; with the platform's auth.required (fail closed),
    a workload KAOS would serve without credentials is Failed rather than served open."""
    guarded = agent.auth.guarded
    _check_required(agent.auth, settings, "Agent", "set spec.auth.apiKeys (a Secret key) or spec.auth.oidc")
    approvers = agent.approval.approvers if agent.approval else ()
    granted = [field for field, given in (("spec.auth.admins", agent.auth.admins),
                                          ("spec.approval.approvers", approvers), ("spec.access", agent.access))
               if given]
    if granted and not guarded:
        raise _Invalid(f"{' and '.join(granted)} {'name' if len(granted) > 1 else 'names'} principals, but this "
                       "Agent has no authentication (spec.auth.apiKeys or spec.auth.oidc): without it every "
                       "caller is anonymous; add one, or remove them")
    _check_access(agent.access, agent.auth.admins, approvers, agent.auth.oidc)


def _check_modelapi_auth(modelapi: ModelAPISpec, settings) -> None:
    guarded = modelapi.auth.guarded
    keyless = modelapi.engine(settings) if modelapi.hosted else None
    if keyless in (OLLAMA, EMBEDDINGS) and (guarded or settings.auth_required):
        reason = "spec.auth asks for keys" if guarded else f"{REQUIRED}, and"
        server = "Ollama" if keyless == OLLAMA else "the offline embedder"
        raise _Invalid(f"{reason} a Hosted ModelAPI on {server} cannot require a key, so it is not deployed "
                       "rather than served open: use hostedConfig.engine llamacpp (llama.cpp checks the keys), "
                       "or a Proxy ModelAPI with spec.auth in front of it")
    _check_required(modelapi.auth, settings, "ModelAPI", "set spec.auth.apiKeys (a Secret key)")


def _check_mcpserver_auth(server: MCPServerSpec, settings) -> None:
    if server.url:  # an external MCP server: not served by KAOS
        if server.auth:
            raise _Invalid("spec.auth: an external MCP server (spec.url) runs elsewhere and KAOS cannot guard it; "
                           "remove spec.auth (the server's own authentication applies)")
        return
    if server.runtime != PYTHON_STRING and (server.auth.guarded or settings.auth_required):
        reason = "spec.auth asks for authentication" if server.auth.guarded else REQUIRED
        raise _Invalid(f"{reason}, which only the python-string runtime enforces; runtime {server.runtime!r} would "
                       "serve its endpoint open, so it is not deployed (use python-string, or run the server "
                       "elsewhere behind its own authentication and name it with spec.url)")
    _check_required(server.auth, settings, "MCPServer", "set spec.auth.apiKeys (a Secret key) or spec.auth.oidc")


def _check_required(auth: Auth, settings, kind: str, remedy: str) -> None:
    if settings.auth_required and not auth.guarded:
        raise _Invalid(f"{REQUIRED} and this {kind} configures none: {remedy}")


ACCESS_VERBS = ("chat", "read", "approve", "admin")


def _check_access(rules, admins, approvers, oidc: bool) -> None:
    """spec.access's rules (the CRD's enum and rule, with the rule's place named), and the users
    the lists name. A group grant applies on an agent with API keys alone too: a coordinator's
    signed assertion carries the groups of the user it relays (docs/security.md, "How identity
    travels"). A bare user name matches only a user the agent's own OIDC issuer signed in; a
    relayed one is named with its route (user:<name> via key:<n>)."""
    for number, rule in enumerate(rules):
        where = f"spec.access[{number}]"
        unknown = [verb for verb in rule.get("verbs") or [] if verb not in ACCESS_VERBS]
        if unknown:
            raise _Invalid(f"{where}.verbs: {unknown[0]!r} is not a verb (one of {', '.join(ACCESS_VERBS)})")
        if not rule.get("verbs"):
            raise _Invalid(f"{where}.verbs is empty: name what the rule grants ({', '.join(ACCESS_VERBS)})")
        if not (rule.get("users") or rule.get("groups") or rule.get("principals")):
            raise _Invalid(f"{where} grants to no one: list users, groups or principals")
        if rule.get("users") and not oidc:
            raise _Invalid(f"{where}.users names users, whom only this Agent's own OIDC issuer signs in: set "
                           "spec.auth.oidc, or grant by groups (a coordinator relays a user's groups), or "
                           "name a relayed user with its route in principals (user:<name> via key:<n>)")
    named = [entry for entry in [*admins, *approvers] if entry.startswith("user:") and " via " not in entry]
    if named and not oidc:
        raise _Invalid(f"{named[0]!r} names an OIDC user, but this Agent has no spec.auth.oidc: set it, or "
                       "name a group, an API key (key:<n>) or a relayed user with its route (user:<name> via key:<n>)")


def _modelapi(modelapi: ModelAPISpec, settings) -> dict[str, Any]:
    spec = modelapi.raw
    if modelapi.hosted:
        if not modelapi.hosted_model:
            raise _Invalid("mode Hosted needs spec.hostedConfig.model (an Ollama tag such as smollm2:135m)")
        try:
            served_by = modelapi.engine(settings)
            if served_by == LLAMACPP:
                gguf(spec)
            elif served_by != EMBEDDINGS:
                ollama_gguf(spec)
                mirror(spec, settings.hosted_registry, settings.hosted_registry_insecure)
        except HostedConfigError as error:
            raise _Invalid(str(error)) from None
        return modelapi_values(modelapi, settings)
    try:
        patterns = offered_models(spec)
        config_names = config_yaml_model_names(spec)
    except ModelConfigError as error:
        raise _Invalid(str(error)) from None
    if not patterns:
        raise _Invalid(
            "mode Proxy needs the models it offers: set spec.proxyConfig.models (exact ids, "
            "provider/* or *), spec.proxyConfig.model, or a configYaml.fromString with a model_list"
        )
    unlisted = [name for name in config_names if not admitted(patterns, name)]
    if unlisted:
        raise _Invalid(
            f"configYaml model_name {', '.join(map(repr, unlisted))} not in proxyConfig.models "
            f"[{', '.join(patterns)}]; list it there too"
        )
    return modelapi_values(modelapi, settings)


def _mcpserver(server: MCPServerSpec, settings) -> dict[str, Any]:
    runtime = server.runtime
    if runtime == PYTHON_STRING and not server.params.strip():
        raise _Invalid("runtime python-string needs spec.params: Python functions that become the tools")
    if runtime == "custom" and not server.container.image:
        raise _Invalid("runtime custom needs spec.container.image")
    if runtime not in BUILTIN_MCP_RUNTIMES and runtime not in settings.mcp_runtimes:
        known = ", ".join([*BUILTIN_MCP_RUNTIMES, *sorted(settings.mcp_runtimes)])
        raise _Invalid(
            f"unknown runtime {runtime!r}; known runtimes: {known} "
            "(registry entries come from the platform chart's mcpRuntimes value)"
        )
    return mcpserver_values(server, settings)


def resolve_model(spec: Mapping[str, Any]) -> tuple[bool, str | None]:
    """(has a model, the model id when known). MODEL_NAME set with valueFrom is present but unknown."""
    agent = agent_spec({"kind": AGENT, "metadata": {"name": "-"}, "spec": spec})
    return agent.names_model, agent.model_id or None


def _agent(agent: AgentSpec, observed, settings, endpoint_of, make) -> Plan:
    if agent.name in agent.network.access:
        raise _Invalid("agentNetwork.access lists the agent itself; remove it")
    _check_memory(agent, settings)
    _check_approval(agent)
    refs = agent_dependencies(agent)
    modelapi_ref = next(r for r in refs if r.kind == MODELAPI)
    modelapi = observed.get(modelapi_ref)
    modelapi_view = modelapi_spec(modelapi) if modelapi is not None else None
    default_model = ""
    if not agent.names_model:
        if modelapi_view is None:
            return make(
                WAITING,
                f"waiting for {modelapi_ref} (not found): the agent names no model, so it uses "
                "the ModelAPI's only model",
                dependencies_ready=False,
                not_ready=(modelapi_ref,),
            )
        default_model = sole_model(modelapi_view.raw) or ""
        if not default_model:
            raise _Invalid(
                f"no model: set spec.model, or a MODEL_NAME entry in spec.config.env "
                f"(ModelAPI {modelapi_ref.name!r} offers no single model to default to)"
            )
    if modelapi_view is not None and agent.model_id:
        _check_model_admitted(agent.model_id, modelapi_ref, modelapi_view)
    for peer in (r for r in refs if r.kind == AGENT):
        peer_object = observed.get(peer)
        if peer_object is not None and not exposed(peer_object):
            raise _Invalid(
                f"peer {peer.name!r} sets agentNetwork.expose: false, so it cannot be reached; "
                "expose it or remove it from agentNetwork.access"
            )

    not_ready = [r for r in refs if not (usable if r.kind == MEMORYSTORE else _is_ready)(observed.get(r))]
    reasons = ", ".join(f"{r} ({_why_not_ready(observed.get(r))})" for r in not_ready)
    if not_ready and agent.wait_for_dependencies:
        return make(WAITING, f"waiting for {reasons}", dependencies_ready=False, not_ready=tuple(not_ready))

    def url(r: Ref) -> str:
        return endpoint(observed[r], settings, endpoint_of)

    present = [r for r in refs if observed.get(r) is not None]
    values = agent_values(
        agent,
        settings,
        model_api_url=url(modelapi_ref) if modelapi is not None else "",
        mcp_servers=[(mcpserver_spec(observed[r]), url(r)) for r in present if r.kind == MCPSERVER],
        peers=[{"name": r.name, "url": url(r)} for r in present if r.kind == AGENT],
        default_model=default_model,
        modelapi=modelapi_view,
        long_term_memory=_long_term_memory(refs, observed, settings),
    )
    message = f"deployed without waiting for {reasons}" if not_ready else ""
    return make(DEPLOY, message, values, dependencies_ready=not not_ready, not_ready=tuple(not_ready))


def _why_not_ready(dependency: Mapping[str, Any] | None) -> str:
    if dependency is None:
        return "not found"
    status = dependency.get("status") or {}
    if dependency.get("kind") == MEMORYSTORE and status.get("message"):
        return f"{(status.get('phase') or 'Pending').lower()}: {status['message']}"
    return "not ready"


def _long_term_memory(refs: list[Ref], observed, settings) -> dict[str, Any]:
    """The long-term memory values of the MemoryStore the agent names, when it can be used (an
    agent deployed without waiting for it has none until it can)."""
    store_ref = next((r for r in refs if r.kind == MEMORYSTORE), None)
    store = observed.get(store_ref) if store_ref else None
    if not usable(store):
        return {}
    try:
        spec = memory_store_spec(store)
    except MemoryStoreSpecError:
        return {}  # the store is Failed, so never usable; kept for a store changed since its status
    return long_term_memory_values(spec, store["status"], settings)


def _check_memory(agent: AgentSpec, settings) -> None:
    """A redis agent needs a Redis; more than one replica needs a memory they share."""
    memory = agent.memory
    backend = memory.backend_or(settings.memory_backend)
    if backend == "redis" and not (memory.redis_url or memory.redis_url_from or settings.memory_redis_url):
        raise _Invalid(
            "spec.memory.backend redis needs a Redis: set spec.memory.redis.url (value, or valueFrom.secretKeyRef), "
            "or give the platform one (the platform chart's memory.redis.deploy or memory.redis.url)"
        )
    autoscaling, replicas = agent.scale.autoscaling, agent.scale.most
    if replicas > 1 and backend == "local" and memory.remembers:
        asked, single = (f"autoscaling up to {replicas} replicas", "autoscaling.maxReplicas to 1") if autoscaling \
            else (f"replicas {replicas}", "replicas to 1")
        raise _Invalid(
            f"{asked} needs a shared memory backend: with spec.memory.backend local each replica "
            "keeps its own sessions, so a conversation would be split between them; set spec.memory.backend "
            f"to redis, or {single} (or config.memory.enabled to false for an agent without memory)"
        )


def _check_approval(agent: AgentSpec) -> None:
    """An approval entry ``mcp:<name>`` or ``peer:<name>`` names a server or a peer of this agent:
    one it does not use would gate nothing, silently (``peer:*`` is any peer). Peers reached by
    URL are named by their A2A cards, unknown here, so with such peers any ``peer:`` name is accepted."""
    if agent.approval is None:
        return
    servers, access = agent.mcp_servers, agent.network.access
    try:
        targets = agent.approval.targets
    except ValueError as error:
        raise _Invalid(f"spec.approval.tools: {error}") from None
    for kind, name in targets:
        entry = f"{kind}:{name}"
        if kind == "mcp" and name not in servers:
            raise _Invalid(f"spec.approval.tools: {entry!r} names an MCP server this agent does not use "
                           f"(spec.mcpServers: {', '.join(servers) or 'none'}); add it there or fix the name")
        if kind == "peer" and name != "*" and name not in access and not agent.network.a2a_urls:
            raise _Invalid(f"spec.approval.tools: {entry!r} names a peer this agent cannot delegate to "
                           f"(agentNetwork.access: {', '.join(access) or 'none'}); add it there or fix the name")


def _check_model_admitted(model: str, modelapi_ref: Ref, modelapi: ModelAPISpec) -> None:
    try:
        patterns = offered_models(modelapi.raw)
    except ModelConfigError:
        return  # the ModelAPI itself is Failed; the agent waits for it
    if patterns and not admitted(patterns, model):
        raise _Invalid(
            f"model {model!r} is not offered by ModelAPI {modelapi_ref.name!r}, which supports: "
            f"{', '.join(patterns)}; set spec.model (or MODEL_NAME) to one of them, "
            "or add the model to the ModelAPI"
        )


def _is_ready(dependency: Mapping[str, Any] | None) -> bool:
    return bool(dependency and (dependency.get("status") or {}).get("ready"))

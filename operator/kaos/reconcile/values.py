"""Resource -> values of its workload chart (charts/<chart>/values.yaml is the contract).

The input is a resource's typed view (kaos.reconcile.specs) of a validated resource: the CRD
schema's defaults (for example the agent's reasoningLoopMaxSteps and memory settings) are in it
already, and are not written again here. What an agent's NetworkPolicy lets it reach (its MCP
servers' ``reaches``, a ModelAPI's upstream) is worked out here too, from the URLs the plan resolved.
"""

from __future__ import annotations

import copy
from typing import Any, Mapping

from kaos.reconcile.endpoints import workload_of_url
from kaos.reconcile.hosted import EMBEDDINGS, LLAMACPP, gguf, mirror, ollama_gguf
from kaos.reconcile.memorystore import EXTERNAL, MemoryStoreSpec, local_url
from kaos.reconcile.models import proxy_models
from kaos.reconcile.specs import AgentSpec, MCPServerSpec, Memory, ModelAPISpec, Scale


def image_values(reference: str | None, default) -> dict[str, str]:
    """``repo[:tag]`` (or ``repo@digest``) -> {repository, tag, pullPolicy}; None -> the default."""
    if not reference:
        return default.values()
    repository, tag = reference, ""
    if "@" in reference:
        repository, tag = reference.split("@", 1)
        tag = "@" + tag
    elif ":" in reference.rsplit("/", 1)[-1]:
        repository, tag = reference.rsplit(":", 1)
    return {"repository": repository, "tag": tag or "latest", "pullPolicy": default.pull_policy}


def gateway_values(gateway_route: Mapping[str, Any], settings, enabled: bool = True) -> dict[str, Any]:
    timeout = gateway_route.get("timeout") or settings.gateway_timeout
    return {
        "enabled": bool(settings.gateway_enabled and enabled),
        "parentRef": {"name": settings.gateway_name, "namespace": settings.gateway_parent_namespace},
        "timeout": timeout,
    }


def network_policy_values(settings) -> dict[str, Any]:
    return {
        "enabled": settings.network_policy_enabled,
        "gatewayNamespaceSelector": dict(settings.gateway_namespace_selector),
    }


def agent_network_policy_values(settings) -> dict[str, Any]:
    """An agent's NetworkPolicy lets in the operator's pods too: they send Triggers' runs. Every
    agent's, not only those a Trigger targets: the operator installs the agent's workload anyway,
    and an agent's release does not change when a Trigger appears or goes."""
    values = network_policy_values(settings)
    if settings.operator_namespace and settings.operator_pod_labels:
        values["triggerRunner"] = {"namespace": settings.operator_namespace,
                                   "podLabels": dict(settings.operator_pod_labels)}
    return values


def _copy_list(items) -> list:
    return copy.deepcopy(list(items or []))


def memory_values(memory: Memory, settings) -> dict[str, Any]:
    """config.memory (the bounds) and spec.memory (where it lives, its compaction) as the chart's ``memory``.
    A redis agent without a URL of its own gets the platform's Redis (settings.memory_redis_url)."""
    backend = memory.backend_or(settings.memory_backend)
    secret_ref = copy.deepcopy(dict(memory.redis_secret_ref))
    value = memory.redis_url
    if backend == "redis" and not value and not secret_ref:
        value = settings.memory_redis_url
    return {
        **copy.deepcopy(dict(memory.bounds)),
        "backend": backend,
        "redis": {"url": value if backend == "redis" else "",
                  "secretKeyRef": secret_ref if backend == "redis" else {}},
        "ttlSeconds": memory.ttl_seconds,
        **({"compaction": {"enabled": True, **copy.deepcopy(dict(memory.compaction))}}
           if memory.compaction is not None else {}),
    }


def long_term_memory_values(store: MemoryStoreSpec, store_status: Mapping[str, Any], settings) -> dict[str, Any]:
    """A MemoryStore as the agent chart's ``longTermMemory``: where the store is (a URL, or a
    Secret key holding one; for storage local the platform's PostgreSQL, settings.memory_postgres_url,
    else the embedded file in settings.memory_store_dir), its collection and
    scope, and the models its status resolved (kaos.reconcile.memorystore.resolve)."""
    summarization = store_status.get("summarization") or {}
    secret = {"name": store.secret.name, "key": store.secret.key} if store.secret else {}
    url = store.url if store.storage == EXTERNAL else local_url(store, settings.memory_store_dir,
                                                                   settings.memory_postgres_url)
    return {
        "enabled": True,
        "store": store.name,
        "url": "" if secret else url,
        "urlSecretKeyRef": secret,
        "collection": store.collection,
        "scope": store.scope,
        "embedding": {"url": store_status["embedding"]["url"], "model": store.embedding.model},
        "extraction": {"url": summarization.get("url") or "",
                       "model": store.summarization.model if store.summarization else ""},
        "retentionDays": store.retention_days,
        "topK": store.top_k,
        # The agent calls them itself: the chart gives its pods their access labels (NetworkPolicies).
        "modelAPIs": list(dict.fromkeys(ref.model_api for ref in (store.embedding, store.summarization) if ref)),
    }


def scale_values(scale: Scale, settings) -> dict[str, Any]:
    """spec.replicas or spec.autoscaling (the CRD allows one at most) as the chart's ``replicas``
    or ``autoscaling``; neither: the chart's default, one replica. With autoscaling the values carry
    no ``replicas``, so the Deployment has none and its HorizontalPodAutoscaler owns the count."""
    scaling = scale.autoscaling
    if not scaling:
        return {"replicas": scale.replicas} if scale.replicas is not None else {}
    target = scaling["target"]
    values = {"enabled": True, "minReplicas": scaling["minReplicas"], "maxReplicas": scaling["maxReplicas"],
              "cpuUtilization": target.get("cpuUtilization") or 0}
    if target.get("requestsInFlight"):  # an Agent's only: the agent chart's values
        values["requestsInFlight"] = target["requestsInFlight"]
        values["keda"] = {"enabled": settings.autoscaling_keda_enabled,
                          "prometheusURL": settings.autoscaling_keda_prometheus_url}
    return {"autoscaling": values}


def budget_values(budget: Mapping[str, Any], model_api_budget: Mapping[str, Any]) -> dict[str, Any]:
    """spec.budget of the Agent and of its ModelAPI as the chart's ``budget`` (0: no limit)."""
    def limits(source: Mapping[str, Any]) -> dict[str, int]:
        return {"tokensPerMinute": source.get("tokensPerMinute") or 0, "tokensPerDay": source.get("tokensPerDay") or 0}

    return {**limits(budget), "perCaller": limits(budget.get("perCaller") or {}), "modelAPI": limits(model_api_budget)}


def agent_values(
    agent: AgentSpec,
    settings,
    model_api_url: str,
    mcp_servers: list[tuple[MCPServerSpec, str]],
    peers: list[dict[str, str]],
    default_model: str = "",
    modelapi: ModelAPISpec | None = None,
    long_term_memory: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``mcp_servers``: each MCP server present with its URL; ``modelapi``: the agent's ModelAPI when
    present (its toolCalling is used when the agent sets none, its budget applies);
    ``long_term_memory``: long_term_memory_values of its MemoryStore (empty: none)."""
    config = agent.config
    telemetry = config.get("telemetry") or {}
    expose = agent.network.expose
    tool_calling = config.get("toolCalling") or (modelapi.tool_calling if modelapi else "")
    return {
        **({"toolCalling": tool_calling} if tool_calling else {}),  # unset: the runtime's auto
        "name": agent.name,
        "image": image_values(agent.container.image, settings.runtime_image),
        **scale_values(agent.scale, settings),
        "description": config.get("description") or "",
        "instructions": config.get("instructions") or "",
        "model": agent.model or default_model,
        "modelAPI": {"name": agent.model_api, "url": model_api_url},
        "reasoningLoopMaxSteps": config["reasoningLoopMaxSteps"],
        **({"contextWindow": config["contextWindow"]} if config.get("contextWindow") else {}),
        "mcpServers": _reaching_once([_mcp_entry(server, url) for server, url in mcp_servers], peers, agent.model_api),
        "peers": peers,
        "a2aPeers": list(agent.network.a2a_urls),
        "memory": memory_values(agent.memory, settings),
        **({"longTermMemory": dict(long_term_memory)} if long_term_memory else {}),  # unset: none
        "telemetry": {
            "enabled": telemetry.get("enabled", settings.telemetry_enabled),
            "endpoint": telemetry.get("endpoint") or settings.telemetry_endpoint,
        },
        "env": copy.deepcopy(agent.env),
        "resources": copy.deepcopy(dict(agent.container.resources)),
        "expose": expose,
        "gateway": gateway_values(agent.gateway_route, settings, enabled=expose),
        "networkPolicy": agent_network_policy_values(settings),
        "metrics": {"annotations": True, "serviceMonitor": {"enabled": settings.service_monitor_enabled}},
        "budget": budget_values(agent.budget, modelapi.budget if modelapi else {}),
        "auth": copy.deepcopy(dict(agent.auth.block)),
        **({"access": copy.deepcopy(list(agent.access))} if agent.access else {}),  # unset: no grants needed
        **({"approval": copy.deepcopy(dict(agent.approval.block))} if agent.approval else {}),  # unset: none gated
    }


def _mcp_entry(server: MCPServerSpec, url: str) -> dict[str, Any]:
    """An MCP server of the agent's values; ``external`` (spec.url) ones get no credential;
    ``identity: forward`` when the server asks for the caller's identity (spec.identity).

    An external one at a KAOS workload's Service (an agent's /mcp, say) ``reaches`` it: the
    agent's pods carry that workload's access label, or its NetworkPolicy would refuse them."""
    if not server.url:
        return {"name": server.name, "url": url, **({"identity": "forward"} if server.identity == "forward" else {})}
    return {"name": server.name, "url": url, "external": True, **_reaches(url, server.namespace)}


def _reaching_once(mcp_servers: list[dict[str, Any]], peers: list[dict[str, str]], modelapi: str) -> list[dict]:
    """The entries without a ``reaches`` whose access label the agent's pods carry already
    (a peer, its ModelAPI, one of its MCP servers, an earlier entry): labels are a map."""
    labelled = {("agent", p["name"]) for p in peers} | {("modelapi", modelapi)}
    labelled |= {("mcpserver", m["name"]) for m in mcp_servers}
    entries = []
    for entry in mcp_servers:
        reaches = entry.get("reaches")
        if reaches and (reaches["kind"], reaches["name"]) in labelled:
            entry = {k: v for k, v in entry.items() if k != "reaches"}
        elif reaches:
            labelled.add((reaches["kind"], reaches["name"]))
        entries.append(entry)
    return entries


def _reaches(url: str, namespace: str) -> dict[str, Any]:
    """``reaches`` when the URL names a KAOS workload's Service (a Proxy in front of a Hosted
    ModelAPI, upstream's shape): the pods then carry its access label, or its NetworkPolicy
    would refuse them."""
    workload = workload_of_url(url, namespace) if url else None
    return {"reaches": {"kind": workload[0], "name": workload[1]}} if workload else {}


def modelapi_values(modelapi: ModelAPISpec, settings) -> dict[str, Any]:
    spec, proxy, container = modelapi.raw, modelapi.proxy, modelapi.container
    api_key = proxy.get("apiKey") or {}
    hosted_image = settings.ollama_image.values()
    proxy_image = settings.litellm_image.values()
    hosted_extra: dict[str, Any] = {}
    if modelapi.hosted:
        hosted_extra["engine"] = modelapi.engine(settings)
        if hosted_extra["engine"] == LLAMACPP:
            hosted_extra["llamacpp"] = {
                "image": image_values(container.image, settings.llamacpp_image),
                "fetchImage": settings.model_fetch_image.values(),
            }
            hosted_extra["gguf"] = gguf(spec)
        elif hosted_extra["engine"] == EMBEDDINGS:
            hosted_extra["embeddings"] = {"image": image_values(container.image, settings.embeddings_image)}
        else:
            hosted_image = image_values(container.image, settings.ollama_image)
            if created_from := ollama_gguf(spec):
                hosted_extra["gguf"] = created_from
            if mirrored := mirror(spec, settings.hosted_registry, settings.hosted_registry_insecure,
                                  settings.hosted_registry_secret):
                hosted_extra["mirror"] = {**mirrored, "fetchImage": settings.model_fetch_image.values()}
    else:
        proxy_image = image_values(container.image, settings.litellm_image)
    return {
        "name": modelapi.name,
        "mode": modelapi.mode,
        **scale_values(modelapi.scale, settings),
        "proxy": {
            "image": proxy_image,
            "models": proxy_models(proxy),
            "provider": proxy.get("provider") or "",
            "apiBase": proxy.get("apiBase") or "",
            **_reaches(proxy.get("apiBase") or "", modelapi.namespace),
            "apiKey": {
                "value": api_key.get("value") or "",
                "secretKeyRef": copy.deepcopy((api_key.get("valueFrom") or {}).get("secretKeyRef") or {}),
            },
            "configYaml": (proxy.get("configYaml") or {}).get("fromString") or "",
            "allowMockResponse": bool(proxy.get("allowMockResponse")),
        },
        "hosted": {
            "image": hosted_image,
            "model": modelapi.hosted_model,
            **hosted_extra,
        },
        "env": copy.deepcopy(list(container.env)),
        "resources": copy.deepcopy(dict(container.resources)),
        "gateway": {**gateway_values(modelapi.gateway_route, settings),
                    "adminRoutes": bool(modelapi.gateway_route.get("adminRoutes"))},
        "networkPolicy": network_policy_values(settings),
        "auth": copy.deepcopy(dict(modelapi.auth.block)),
    }


def mcpserver_values(server: MCPServerSpec, settings) -> dict[str, Any]:
    container = server.container
    image = {"repository": "", "tag": "", "pullPolicy": "IfNotPresent"}
    if container.image:
        image = image_values(container.image, settings.runtime_image)
    return {
        "name": server.name,
        "runtime": server.runtime,
        **scale_values(server.scale, settings),
        "params": server.params,
        "url": server.url,
        "runtimeImage": settings.runtime_image.values(),
        "image": image,
        "command": list(container.command),
        "args": list(container.args),
        "registry": copy.deepcopy(dict(settings.mcp_runtimes)),
        "env": copy.deepcopy(list(container.env)),
        "resources": copy.deepcopy(dict(container.resources)),
        "serviceAccountName": server.service_account_name,
        "auth": copy.deepcopy(dict(server.auth.block)),
        "gateway": gateway_values(server.gateway_route, settings),
        "networkPolicy": network_policy_values(settings),
    }

"""Resource -> values of its workload chart (charts/<chart>/values.yaml is the contract).

The resource is a validated one: the CRD schema's defaults (for example the agent's
reasoningLoopMaxSteps and memory settings) are in it already, and are not written again here.
"""

from __future__ import annotations

import copy
from typing import Any, Mapping

from kaos.reconcile.endpoints import workload_of_url
from kaos.reconcile.hosted import EMBEDDINGS, LLAMACPP, engine, gguf, mirror, ollama_gguf
from kaos.reconcile.memorystore import EXTERNAL, MemoryStoreSpec, local_url
from kaos.reconcile.models import proxy_models
from kaos.reconcile.refs import a2a_peer_urls, ref_of


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


def gateway_values(spec: Mapping[str, Any], settings, enabled: bool = True) -> dict[str, Any]:
    timeout = (spec.get("gatewayRoute") or {}).get("timeout") or settings.gateway_timeout
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


def _container(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    return spec.get("container") or {}


def _copy_list(items) -> list:
    return copy.deepcopy(list(items or []))


def memory_values(spec: Mapping[str, Any], settings) -> dict[str, Any]:
    """config.memory (the bounds) and spec.memory (where it lives, its compaction) as the chart's ``memory``.
    A redis agent without a URL of its own gets the platform's Redis (settings.memory_redis_url)."""
    config = (spec.get("config") or {}).get("memory") or {}
    memory = spec.get("memory") or {}
    backend = memory.get("backend") or settings.memory_backend
    url = ((memory.get("redis") or {}).get("url")) or {}
    secret_ref = copy.deepcopy((url.get("valueFrom") or {}).get("secretKeyRef") or {})
    value = url.get("value") or ""
    if backend == "redis" and not value and not secret_ref:
        value = settings.memory_redis_url
    return {
        **copy.deepcopy(config),
        "backend": backend,
        "redis": {"url": value if backend == "redis" else "",
                  "secretKeyRef": secret_ref if backend == "redis" else {}},
        "ttlSeconds": memory.get("ttlSeconds") or 0,
        **({"compaction": {"enabled": True, **copy.deepcopy(memory["compaction"])}} if "compaction" in memory else {}),
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


def scale_values(spec: Mapping[str, Any], settings) -> dict[str, Any]:
    """spec.replicas or spec.autoscaling (the CRD allows one at most) as the chart's ``replicas``
    or ``autoscaling``; neither: the chart's default, one replica. With autoscaling the values carry
    no ``replicas``, so the Deployment has none and its HorizontalPodAutoscaler owns the count."""
    scaling = spec.get("autoscaling")
    if not scaling:
        return {"replicas": spec["replicas"]} if "replicas" in spec else {}
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
    resource: Mapping[str, Any],
    settings,
    model_api_url: str,
    mcp_servers: list[dict[str, str]],
    peers: list[dict[str, str]],
    default_model: str = "",
    model_tool_calling: str = "",
    model_api_budget: Mapping[str, Any] | None = None,
    long_term_memory: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``model_tool_calling``: the ModelAPI's spec.toolCalling, used when the agent sets none;
    ``long_term_memory``: long_term_memory_values of its MemoryStore (empty: none)."""
    spec = resource.get("spec") or {}
    config = spec.get("config") or {}
    container = _container(spec)
    telemetry = config.get("telemetry") or {}
    expose = (spec.get("agentNetwork") or {}).get("expose", True)
    tool_calling = config.get("toolCalling") or model_tool_calling
    return {
        **({"toolCalling": tool_calling} if tool_calling else {}),  # unset: the runtime's auto
        "name": ref_of(resource).name,
        "image": image_values(container.get("image"), settings.runtime_image),
        **scale_values(spec, settings),
        "description": config.get("description") or "",
        "instructions": config.get("instructions") or "",
        "model": spec.get("model") or default_model,
        "modelAPI": {"name": spec.get("modelAPI", ""), "url": model_api_url},
        "reasoningLoopMaxSteps": config["reasoningLoopMaxSteps"],
        **({"contextWindow": config["contextWindow"]} if config.get("contextWindow") else {}),
        "mcpServers": mcp_servers,
        "peers": peers,
        "a2aPeers": a2a_peer_urls(spec),
        "memory": memory_values(spec, settings),
        **({"longTermMemory": dict(long_term_memory)} if long_term_memory else {}),  # unset: none
        "telemetry": {
            "enabled": telemetry.get("enabled", settings.telemetry_enabled),
            "endpoint": telemetry.get("endpoint") or settings.telemetry_endpoint,
        },
        "env": _copy_list(config.get("env")) + _copy_list(container.get("env")),
        "resources": copy.deepcopy(container.get("resources") or {}),
        "expose": expose,
        "gateway": gateway_values(spec, settings, enabled=expose),
        "networkPolicy": agent_network_policy_values(settings),
        "metrics": {"annotations": True, "serviceMonitor": {"enabled": settings.service_monitor_enabled}},
        "budget": budget_values(spec.get("budget") or {}, model_api_budget or {}),
        "auth": copy.deepcopy(spec.get("auth") or {}),
        **({"access": copy.deepcopy(spec["access"])} if spec.get("access") else {}),  # unset: no grants needed
        **({"approval": copy.deepcopy(spec["approval"])} if spec.get("approval") else {}),  # unset: none gated
    }


def _reaches(url: str, namespace: str) -> dict[str, Any]:
    """``reaches`` when the URL names a KAOS workload's Service (a Proxy in front of a Hosted
    ModelAPI, upstream's shape): the pods then carry its access label, or its NetworkPolicy
    would refuse them."""
    workload = workload_of_url(url, namespace) if url else None
    return {"reaches": {"kind": workload[0], "name": workload[1]}} if workload else {}


def modelapi_values(resource: Mapping[str, Any], settings) -> dict[str, Any]:
    spec = resource.get("spec") or {}
    proxy = spec.get("proxyConfig") or {}
    container = _container(spec)
    api_key = proxy.get("apiKey") or {}
    hosted_image = settings.ollama_image.values()
    proxy_image = settings.litellm_image.values()
    hosted_extra: dict[str, Any] = {}
    if spec.get("mode") == "Hosted":
        hosted_extra["engine"] = engine(spec, bool(settings.hosted_registry))
        if hosted_extra["engine"] == LLAMACPP:
            hosted_extra["llamacpp"] = {
                "image": image_values(container.get("image"), settings.llamacpp_image),
                "fetchImage": settings.model_fetch_image.values(),
            }
            hosted_extra["gguf"] = gguf(spec)
        elif hosted_extra["engine"] == EMBEDDINGS:
            hosted_extra["embeddings"] = {"image": image_values(container.get("image"), settings.embeddings_image)}
        else:
            hosted_image = image_values(container.get("image"), settings.ollama_image)
            if created_from := ollama_gguf(spec):
                hosted_extra["gguf"] = created_from
            if mirrored := mirror(spec, settings.hosted_registry, settings.hosted_registry_insecure,
                                  settings.hosted_registry_secret):
                hosted_extra["mirror"] = {**mirrored, "fetchImage": settings.model_fetch_image.values()}
    else:
        proxy_image = image_values(container.get("image"), settings.litellm_image)
    return {
        "name": ref_of(resource).name,
        "mode": spec.get("mode", "Proxy"),
        **scale_values(spec, settings),
        "proxy": {
            "image": proxy_image,
            "models": proxy_models(proxy),
            "provider": proxy.get("provider") or "",
            "apiBase": proxy.get("apiBase") or "",
            **_reaches(proxy.get("apiBase") or "", ref_of(resource).namespace),
            "apiKey": {
                "value": api_key.get("value") or "",
                "secretKeyRef": copy.deepcopy((api_key.get("valueFrom") or {}).get("secretKeyRef") or {}),
            },
            "configYaml": (proxy.get("configYaml") or {}).get("fromString") or "",
            "allowMockResponse": bool(proxy.get("allowMockResponse")),
        },
        "hosted": {
            "image": hosted_image,
            "model": (spec.get("hostedConfig") or {}).get("model") or "",
            **hosted_extra,
        },
        "env": _copy_list(container.get("env")),
        "resources": copy.deepcopy(container.get("resources") or {}),
        "gateway": {**gateway_values(spec, settings),
                    "adminRoutes": bool((spec.get("gatewayRoute") or {}).get("adminRoutes"))},
        "networkPolicy": network_policy_values(settings),
        "auth": copy.deepcopy(spec.get("auth") or {}),
    }


def mcpserver_values(resource: Mapping[str, Any], settings) -> dict[str, Any]:
    spec = resource.get("spec") or {}
    container = _container(spec)
    image = {"repository": "", "tag": "", "pullPolicy": "IfNotPresent"}
    if container.get("image"):
        image = image_values(container["image"], settings.runtime_image)
    return {
        "name": ref_of(resource).name,
        "runtime": spec.get("runtime", "python-string"),
        **scale_values(spec, settings),
        "params": spec.get("params") or "",
        "url": spec.get("url") or "",
        "runtimeImage": settings.runtime_image.values(),
        "image": image,
        "command": list(container.get("command") or []),
        "args": list(container.get("args") or []),
        "registry": copy.deepcopy(dict(settings.mcp_runtimes)),
        "env": _copy_list(container.get("env")),
        "resources": copy.deepcopy(container.get("resources") or {}),
        "serviceAccountName": spec.get("serviceAccountName") or "",
        "auth": copy.deepcopy(spec.get("auth") or {}),
        "gateway": gateway_values(spec, settings),
        "networkPolicy": network_policy_values(settings),
    }


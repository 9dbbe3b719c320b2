"""What the CLI prints: tables, progress lines and the "try it" summary (pure functions)."""

from __future__ import annotations

from kaos.api import namespace_of
from kaos.routes import gateway_path

KIND_COLUMN = {"Agent": "MODEL", "ModelAPI": "MODELS", "MCPServer": "RUNTIME"}


def agent_model(spec: dict) -> str:
    if spec.get("model"):
        return spec["model"]
    env = [*((spec.get("config") or {}).get("env") or []), *((spec.get("container") or {}).get("env") or [])]
    values = [e.get("value") for e in env if e.get("name") == "MODEL_NAME" and e.get("value")]
    return values[-1] if values else ""


def model_column(resource: dict) -> str:
    spec = resource.get("spec") or {}
    kind = resource.get("kind")
    if kind == "Agent":
        return agent_model(spec)
    if kind == "ModelAPI":
        if spec.get("mode") == "Hosted":
            return (spec.get("hostedConfig") or {}).get("model", "")
        proxy = spec.get("proxyConfig") or {}
        models = proxy.get("models") or ([proxy["model"]] if proxy.get("model") else [])
        return ",".join(models)
    return (spec.get("url") and "external") or spec.get("runtime", "")


def aligned(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("   ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows)


def namespaced(header: list[str], rows: list[tuple[str, list[str]]], show_namespace: bool) -> str:
    """``aligned`` of the header and the rows (namespace, cells), with a NAMESPACE column first when
    ``show_namespace`` (-A)."""
    if show_namespace:
        return aligned([["NAMESPACE", *header], *([namespace, *cells] for namespace, cells in rows)])
    return aligned([header, *(cells for _, cells in rows)])


def trigger_table(resources: list[dict], show_namespace: bool = False) -> str:
    """Triggers: NAME, AGENT, SCHEDULE (or webhook), LAST RUN, NEXT RUN, LAST OUTCOME, PHASE."""
    if not resources:
        return "No resources found."
    rows = []
    for resource in resources:
        spec, status, metadata = (resource.get(key) or {} for key in ("spec", "status", "metadata"))
        history = status.get("history") or []
        rows.append((namespace_of(metadata), [
            metadata.get("name", ""),
            spec.get("agent", ""),
            f"{spec['schedule']}{' ' + spec['timeZone'] if spec.get('timeZone') else ''}" if spec.get("schedule")
            else "webhook",
            status.get("lastRun") or "-",
            status.get("nextRun") or "-",
            ("Running" if status.get("active") else None) or (history[-1].get("outcome") if history else "-"),
            status.get("phase") or "Pending",
        ]))
    return namespaced(["NAME", "AGENT", "SCHEDULE", "LAST RUN", "NEXT RUN", "LAST OUTCOME", "PHASE"], rows,
                      show_namespace)


def memory_store_table(resources: list[dict], show_namespace: bool = False) -> str:
    """MemoryStores: NAME, STORAGE, SCOPE, EMBEDDING (modelAPI/model), PHASE, MESSAGE (why Degraded)."""
    rows = []
    for resource in resources:
        spec, status, metadata = (resource.get(key) or {} for key in ("spec", "status", "metadata"))
        embedding = (spec.get("models") or {}).get("embedding") or {}
        rows.append((namespace_of(metadata), [
            metadata.get("name", ""), (spec.get("storage") or {}).get("type") or "local", spec.get("scope") or "user",
            f"{embedding.get('modelAPI', '')}/{embedding.get('model', '')}", status.get("phase") or "Pending",
            status.get("message") or "-"]))
    return namespaced(["NAME", "STORAGE", "SCOPE", "EMBEDDING", "PHASE", "MESSAGE"], rows, show_namespace)


def table(resources: list[dict], show_namespace: bool = False) -> str:
    """A kubectl-like table of one kind: NAME, MODEL, READY, PHASE, ENDPOINT."""
    if not resources:
        return "No resources found."
    kind = resources[0].get("kind")
    if kind == "Trigger":
        return trigger_table(resources, show_namespace)
    if kind == "MemoryStore":
        return memory_store_table(resources, show_namespace)
    rows = []
    for resource in resources:
        status = resource.get("status") or {}
        metadata = resource.get("metadata") or {}
        rows.append((namespace_of(metadata), [
            metadata.get("name", ""),
            model_column(resource) or "-",
            "true" if status.get("ready") else "false",
            status.get("phase") or "Pending",
            status.get("endpoint") or "-",
        ]))
    return namespaced(["NAME", KIND_COLUMN.get(kind, "MODEL"), "READY", "PHASE", "ENDPOINT"], rows, show_namespace)


def progress_line(resource: dict) -> str:
    metadata = resource.get("metadata") or {}
    status = resource.get("status") or {}
    message = status.get("message") or ""
    line = f"{resource.get('kind')} {metadata.get('namespace')}/{metadata.get('name')}: {status.get('phase', 'Pending')}"
    return f"{line} ({message})" if message and status.get("phase") != "Ready" else line


def settled(resources: list[dict]) -> bool:
    """Every resource Ready or Failed (or a Trigger Suspended: it stays so until resumed; or a
    MemoryStore Degraded: its agents run without it until its store or embedder answers)."""
    return all((r.get("status") or {}).get("phase") in ("Ready", "Failed", "Suspended", "Degraded") for r in resources)


def suggested_agent(resources: list[dict]) -> dict | None:
    """The agent to chat with first: one that delegates to others, else the first Ready agent."""
    agents = [r for r in resources if r.get("kind") == "Agent" and (r.get("status") or {}).get("ready")]
    delegating = [a for a in agents if ((a.get("spec") or {}).get("agentNetwork") or {}).get("access")]
    return (delegating or agents or [None])[0]


def where(resource: dict, gateway: str) -> str:
    """Where a resource is reached through the gateway (a scheduled Trigger: when it runs next)."""
    metadata, spec = resource["metadata"], resource.get("spec") or {}
    if resource["kind"] == "Trigger":
        if spec.get("webhook"):
            return f"POST {gateway}/{metadata['namespace']}/trigger/{metadata['name']}"
        return f"schedule {spec.get('schedule')}, next run {(resource.get('status') or {}).get('nextRun') or '-'}"
    if resource["kind"] == "MemoryStore":  # no route: the agents that name it serve /memory/long-term
        storage = (spec.get("storage") or {}).get("type") or "local"
        return f"{storage} store, collection {(resource.get('status') or {}).get('collection') or '-'}"
    path = gateway_path(metadata["namespace"], resource["kind"], metadata["name"])
    if resource["kind"] == "MCPServer" and not spec.get("url"):
        path += "/mcp"
    return gateway + path


def summary(resources: list[dict], gateway: str) -> str:
    """The URLs of every resource through the gateway and a `kaos chat` line to try."""
    lines = [f"Gateway: {gateway}"]
    for resource in resources:
        status = resource.get("status") or {}
        state = status.get("phase", "Pending")
        detail = f"  {status.get('message')}" if state in ("Failed", "Degraded") and status.get("message") else ""
        lines.append(f"  {resource['kind']:<9} {resource['metadata']['name']:<20} {state:<8} "
                     f"{where(resource, gateway)}{detail}")
    agent = suggested_agent(resources)
    if agent is not None:
        namespace = agent["metadata"]["namespace"]
        flag = "" if namespace == "default" else f" -n {namespace}"
        lines.append("")
        lines.append("Try:")
        lines.append(f"  kaos chat {agent['metadata']['name']}{flag} \"Hello! What can you do?\"")
        lines.append(f"  curl {gateway}{gateway_path(namespace, 'Agent', agent['metadata']['name'])}/.well-known/agent")
    return "\n".join(lines)

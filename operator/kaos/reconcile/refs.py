"""What a resource is called, where its release goes, and what it depends on."""

from __future__ import annotations

from typing import Any, Mapping, NamedTuple

from kaos.api import AGENT, CHART_OF, KINDS, MCPSERVER, MEMORYSTORE, MODELAPI, TRIGGER

__all__ = [
    "AGENT", "CHART_OF", "KINDS", "MCPSERVER", "MODELAPI",
    "Ref", "a2a_peer_urls", "dependencies", "is_url", "ref_of", "release_name",
]


class Ref(NamedTuple):
    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind} {self.name}"


def ref_of(resource: Mapping[str, Any]) -> Ref:
    metadata = resource.get("metadata") or {}
    return Ref(resource["kind"], metadata.get("namespace") or "default", metadata["name"])


def release_name(kind: str, name: str) -> str:
    return f"{CHART_OF[kind]}-{name}"


def is_url(entry: str) -> bool:
    """An ``agentNetwork.access`` entry that is the URL of an A2A agent rather than an Agent's name."""
    return entry.startswith(("http://", "https://"))


def a2a_peer_urls(spec: Mapping[str, Any]) -> list[str]:
    """The A2A agents an Agent names by URL in ``agentNetwork.access``, each once. No dependency:
    nothing waits for them; the runtime fetches their cards and reports what it cannot reach."""
    return _unique([entry for entry in (spec.get("agentNetwork") or {}).get("access") or [] if is_url(entry)])


def dependencies(resource: Mapping[str, Any]) -> list[Ref]:
    """The ModelAPI, each MCPServer, each peer Agent (an A2A agent named by URL is none) and the
    MemoryStore an Agent names; a Trigger's Agent; a MemoryStore's ModelAPIs; nothing for other kinds."""
    if resource.get("kind") == TRIGGER:
        agent = (resource.get("spec") or {}).get("agent")
        return [Ref(AGENT, ref_of(resource).namespace, agent)] if agent else []
    if resource.get("kind") == MEMORYSTORE:
        models = (resource.get("spec") or {}).get("models") or {}
        names = [(models.get(role) or {}).get("modelAPI") for role in ("embedding", "summarization")]
        return [Ref(MODELAPI, ref_of(resource).namespace, name) for name in _unique([n for n in names if n])]
    if resource.get("kind") != AGENT:
        return []
    namespace = ref_of(resource).namespace
    spec = resource.get("spec") or {}
    refs = [Ref(MODELAPI, namespace, spec["modelAPI"])] if spec.get("modelAPI") else []
    refs += [Ref(MCPSERVER, namespace, name) for name in _unique(spec.get("mcpServers") or [])]
    access = (spec.get("agentNetwork") or {}).get("access") or []
    refs += [Ref(AGENT, namespace, name) for name in _unique(access) if not is_url(name)]
    store = (spec.get("memory") or {}).get("store")
    return refs + ([Ref(MEMORYSTORE, namespace, store)] if store else [])


def _unique(names: list[str]) -> list[str]:
    return list(dict.fromkeys(names))

"""What a resource is called, where its release goes, and what it depends on."""

from __future__ import annotations

from typing import Any, Mapping, NamedTuple

from kaos.api import AGENT, CHART_OF, KINDS, MCPSERVER, MEMORYSTORE, MODELAPI, TRIGGER, namespace_of
from kaos.reconcile.specs import AgentSpec, agent_spec, is_url

__all__ = [
    "AGENT", "CHART_OF", "KINDS", "MCPSERVER", "MODELAPI",
    "Ref", "agent_dependencies", "dependencies", "is_url", "ref_of", "release_name",
]


class Ref(NamedTuple):
    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind} {self.name}"


def ref_of(resource: Mapping[str, Any]) -> Ref:
    metadata = resource.get("metadata") or {}
    return Ref(resource["kind"], namespace_of(metadata), metadata["name"])


def release_name(kind: str, name: str) -> str:
    return f"{CHART_OF[kind]}-{name}"


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
    return agent_dependencies(agent_spec(resource)) if resource.get("kind") == AGENT else []


def agent_dependencies(agent: AgentSpec) -> list[Ref]:
    namespace = agent.namespace
    refs = [Ref(MODELAPI, namespace, agent.model_api)] if agent.model_api else []
    refs += [Ref(MCPSERVER, namespace, name) for name in _unique(list(agent.mcp_servers))]
    refs += [Ref(AGENT, namespace, name) for name in agent.network.peers]
    return refs + ([Ref(MEMORYSTORE, namespace, agent.memory.store)] if agent.memory.store else [])


def _unique(names: list[str]) -> list[str]:
    return list(dict.fromkeys(names))

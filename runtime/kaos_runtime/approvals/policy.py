"""Which tool calls wait for a person's decision: the policy of ``TOOL_APPROVAL_*``, pure.

An entry of ``TOOL_APPROVAL_REQUIRED`` is a tool name, ``*`` (every MCP tool), ``mcp:<server>``
(every tool of that MCP server) or ``peer:<agent>`` / ``peer:*`` (delegating to that peer, to
any peer). With ``TOOL_APPROVAL_FROM_ANNOTATIONS`` a tool whose MCP annotations say
``destructiveHint: true`` and not ``readOnlyHint: true`` is gated as well.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.approval_entries import approval_entry
from ..core.settings import ApprovalSettings


def destructive(annotations: dict | None) -> bool:
    """What the annotations say explicitly: destructive, and not read-only."""
    annotations = annotations or {}
    return annotations.get("destructiveHint") is True and annotations.get("readOnlyHint") is not True


@dataclass(frozen=True)
class ApprovalPolicy:
    tools: frozenset[str] = frozenset()
    servers: frozenset[str] = frozenset()
    peers: frozenset[str] = frozenset()
    every_tool: bool = False
    every_peer: bool = False
    from_annotations: bool = False
    timeout_seconds: int = 600
    proceed_on_timeout: bool = False

    @classmethod
    def from_settings(cls, settings: ApprovalSettings) -> "ApprovalPolicy":
        tools, servers, peers = set(), set(), set()
        for entry in settings.required:  # checked by ApprovalSettings
            kind, name = approval_entry(entry)
            {"tool": tools, "mcp": servers, "peer": peers}[kind].add(name)
        return cls(tools=frozenset(tools - {"*"}), servers=frozenset(servers), peers=frozenset(peers - {"*"}),
                   every_tool="*" in tools, every_peer="*" in peers, from_annotations=settings.from_annotations,
                   timeout_seconds=settings.timeout_seconds, proceed_on_timeout=settings.on_timeout == "proceed")

    @property
    def enabled(self) -> bool:
        return bool(self.tools or self.servers or self.peers or self.every_tool or self.every_peer
                    or self.from_annotations)

    def gates_tool(self, tool: str, server: str | None, annotations: dict | None) -> bool:
        """A call of the MCP tool ``tool`` (offered by ``server``, with those annotations)."""
        return (self.every_tool or tool in self.tools or (server is not None and server in self.servers)
                or (self.from_annotations and destructive(annotations)))

    def gates_peer(self, peer: str) -> bool:
        """A delegation to ``peer``."""
        return self.every_peer or peer in self.peers

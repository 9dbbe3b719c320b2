"""The grammar of an approval entry (an Agent's ``spec.approval.tools``, the runtime's
``TOOL_APPROVAL_REQUIRED``): one rule for the runtime, which gates calls by it, and the control
side, which checks that an entry names a server or a peer the agent has (kaos.reconcile.plan). The
control side cannot import the runtime: scripts/generate writes this function into
operator/kaos/reconcile/approval_entries.py, and tests/test_generated.py checks it is current.
"""


def approval_entry(entry: str) -> tuple[str, str]:
    """An entry as (what it gates, the name): ``("tool", name)`` for a tool's name or ``*``
    (every MCP tool), ``("mcp", server)`` (every tool of that MCP server), ``("peer", agent)`` or
    ``("peer", "*")`` (delegating to that peer, to any peer). ValueError, naming the entry, for
    one that is none of these."""
    prefix, colon, name = entry.partition(":")
    if colon and prefix in ("mcp", "peer") and not name.strip():
        raise ValueError(f"{entry!r} needs a name after {prefix}:")
    if colon and prefix not in ("mcp", "peer"):
        raise ValueError(f"{entry!r} is not a tool name, *, mcp:<server> or peer:<agent>")
    if any(character.isspace() for character in entry):
        raise ValueError(f"{entry!r} holds white space")
    return (prefix, name) if colon else ("tool", entry)

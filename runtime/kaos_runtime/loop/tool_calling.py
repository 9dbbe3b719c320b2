"""Native (OpenAI-style) tool calling: what the model is offered and what it asks for.

In native mode the model gets the MCP tools, and a ``delegate`` function when the agent has
peers, as OpenAI ``tools``, and asks for work with ``tool_calls``. This module is pure: it
turns discovered tools and peers into ``tools``, the model's calls (``clients.tool_calls.NativeCall``)
into the same actions a fenced block asks for (``blocks.ToolCall``, ``blocks.Delegation``,
``blocks.BadBlock``), and results into ``tool`` messages.
"""

from __future__ import annotations

import json
from typing import Any, Iterable

from ..clients.tool_calls import NativeCall
from .blocks import Action, BadBlock, Delegation, ToolCall

DELEGATE_TOOL = "delegate"


def openai_tools(skills: list[dict], peers: list[dict]) -> list[dict]:
    """MCP tools ({name, description, inputSchema}) and, with peers, the ``delegate`` function."""
    tools = []
    for skill in skills:
        if peers and skill["name"] == DELEGATE_TOOL:
            continue  # the name is the delegation function's while the agent has peers
        schema = skill.get("inputSchema") or {}
        if schema.get("type") != "object":
            schema = {"type": "object", "properties": {}}
        tools.append({"type": "function", "function": {
            "name": skill["name"], "description": skill.get("description") or "", "parameters": schema,
        }})
    if peers:
        listing = "\n".join(f"- {peer['name']}: {peer.get('description') or ''}" for peer in peers)
        tools.append({"type": "function", "function": {
            "name": DELEGATE_TOOL,
            "description": f"Delegate a task to another agent; its answer comes back as the result. Agents:\n{listing}",
            "parameters": {
                "type": "object",
                "properties": {
                    "agent": {"type": "string", "enum": [peer["name"] for peer in peers],
                              "description": "The agent to ask"},
                    "task": {"type": "string", "description": "What the agent should do"},
                },
                "required": ["agent", "task"],
            },
        }})
    return tools


def action_of(call: NativeCall, delegation: bool) -> Action:
    """What a native call asks for; ``delegation``: the agent has peers (``delegate`` is theirs)."""
    kind = "delegate" if delegation and call.name == DELEGATE_TOOL else "tool_call"
    try:
        arguments: Any = json.loads(call.arguments) if call.arguments.strip() else {}
    except ValueError as error:
        return BadBlock(kind, f"the arguments of the {call.name} call are not valid JSON ({error})")
    if not isinstance(arguments, dict):
        return BadBlock(kind, f"the arguments of the {call.name} call must be a JSON object")
    if kind == "tool_call":
        return ToolCall(call.name, arguments)
    agent, task = arguments.get("agent"), arguments.get("task")
    if not isinstance(agent, str) or not agent or not isinstance(task, str):
        return BadBlock(kind, 'a delegate call needs "agent" and "task" (strings)')
    return Delegation(agent, task)


def assistant_message(content: str, calls: Iterable[NativeCall]) -> dict:
    return {"role": "assistant", "content": content or None, "tool_calls": [call.message() for call in calls]}


def tool_message(call: NativeCall, text: str) -> dict:
    return {"role": "tool", "tool_call_id": call.id, "content": text}

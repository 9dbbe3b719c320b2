"""The system prompt: instructions, the tools the agent may call and the peers it may ask
(described for fenced blocks, or alongside native tools)."""

from __future__ import annotations

import json


def system_prompt(instructions: str, tools: list[dict], peers: list[dict]) -> str:
    """tools: [{name, description, inputSchema}]; peers: [{name, description}]."""
    parts = [instructions.strip() or "You are a helpful agent."]
    if tools:
        lines = [
            "You can call tools. To call one, reply with only a fenced block like:",
            '```tool_call\n{"tool": "<name>", "arguments": {...}}\n```',
            "The result comes back in the next message. Tools:",
        ]
        for tool in tools:
            schema = json.dumps(tool.get("inputSchema") or {}, separators=(",", ":"))
            lines.append(f"- {tool['name']}: {tool.get('description') or ''} (input schema: {schema})")
        parts.append("\n".join(lines))
    if peers:
        lines = [
            "You can delegate a task to another agent. To do so, reply with only a fenced block like:",
            '```delegate\n{"agent": "<name>", "task": "<what to do>"}\n```',
            "Its answer comes back in the next message. Agents:",
        ]
        lines += [f"- {peer['name']}: {peer.get('description') or ''}" for peer in peers]
        parts.append("\n".join(lines))
    if tools or peers:
        parts.append("When you have the final answer, reply with plain text and no block.")
    return "\n\n".join(parts)


def native_system_prompt(instructions: str, tools: list[dict], peers: list[dict]) -> str:
    """The system prompt when tools go to the model as OpenAI ``tools`` (their names,
    descriptions and schemas travel there, and the peers in the ``delegate`` function)."""
    parts = [instructions.strip() or "You are a helpful agent."]
    if tools:
        parts.append("You can call the functions you are given; their results come back to you.")
    if peers:
        lines = ["You can delegate a task to another agent with the delegate function. Agents:"]
        lines += [f"- {peer['name']}: {peer.get('description') or ''}" for peer in peers]
        parts.append("\n".join(lines))
    if tools or peers:
        parts.append("When you have the final answer, reply with plain text.")
    return "\n\n".join(parts)

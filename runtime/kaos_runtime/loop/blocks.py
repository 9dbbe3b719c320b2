"""Find the fenced ```tool_call / ```delegate block a model reply asks for."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

BLOCK = re.compile(r"```[ \t]*(tool_call|delegate)[ \t]*\r?\n(.*?)```", re.DOTALL)


@dataclass(frozen=True)
class ToolCall:
    tool: str
    arguments: dict


@dataclass(frozen=True)
class Delegation:
    agent: str
    task: str


@dataclass(frozen=True)
class BadBlock:
    kind: str
    problem: str


Action = ToolCall | Delegation | BadBlock


def find_action(reply: str) -> Action | None:
    """The first block in the reply, or None when the reply is a final answer."""
    match = BLOCK.search(reply)
    if match is None:
        return None
    kind, body = match.group(1), match.group(2).strip()
    try:
        data: Any = json.loads(body)
    except ValueError as error:
        return BadBlock(kind, f"the {kind} block is not valid JSON ({error})")
    if not isinstance(data, dict):
        return BadBlock(kind, f"the {kind} block must be a JSON object")
    if kind == "tool_call":
        tool, arguments = data.get("tool"), data.get("arguments", {})
        if not isinstance(tool, str) or not tool:
            return BadBlock(kind, 'a tool_call block needs "tool" (a string)')
        if not isinstance(arguments, dict):
            return BadBlock(kind, '"arguments" of a tool_call block must be an object')
        return ToolCall(tool, arguments)
    agent, task = data.get("agent"), data.get("task")
    if not isinstance(agent, str) or not agent or not isinstance(task, str):
        return BadBlock(kind, 'a delegate block needs "agent" and "task" (strings)')
    return Delegation(agent, task)

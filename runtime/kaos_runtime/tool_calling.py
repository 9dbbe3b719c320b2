"""Native (OpenAI-style) tool calling: what the model is offered and what it asks for.

In native mode the model gets the MCP tools, and a ``delegate`` function when the agent has
peers, as OpenAI ``tools``, and asks for work with ``tool_calls``. This module is pure: it
turns discovered tools and peers into ``tools``, the model's ``tool_calls`` (whole, or as
streamed fragments) into the same actions a fenced block asks for (``blocks.ToolCall``,
``blocks.Delegation``, ``blocks.BadBlock``), and results into ``tool`` messages.

Scripted replies (DEBUG_MOCK_RESPONSES) may be native too: an entry that is an object
``{"content": "...", "tool_calls": [{"name": "echo", "arguments": {"message": "hi"}}]}``
(``id`` optional; OpenAI's ``{"id", "type": "function", "function": {"name", "arguments"}}``
form is accepted as well, its ``arguments`` a JSON string).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable

from .blocks import Action, BadBlock, Delegation, ToolCall

DELEGATE_TOOL = "delegate"
MODES = ("auto", "native", "fenced")


@dataclass(frozen=True)
class NativeCall:
    """One entry of a model's ``tool_calls``: its id, the function name and the arguments as
    the model wrote them (a JSON text)."""

    id: str
    name: str
    arguments: str

    def message(self) -> dict:
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


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


def calls_of(raw: Any, prefix: str = "call") -> tuple[NativeCall, ...]:
    """``tool_calls`` of a whole message (OpenAI form, or the short form of scripted replies)."""
    calls = []
    for index, item in enumerate(raw or ()):
        item = item if isinstance(item, dict) else _as_dict(item)
        function = item.get("function") if isinstance(item.get("function"), dict) else item
        name = function.get("name")
        arguments = function.get("arguments", {})
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments)
        calls.append(NativeCall(id=str(item.get("id") or f"{prefix}_{index}"), name=str(name or ""),
                                arguments=arguments))
    return tuple(calls)


def _as_dict(item: Any) -> dict:
    """A litellm/pydantic tool call object as a dict."""
    if hasattr(item, "model_dump"):
        return item.model_dump()
    return dict(item)


class CallAssembler:
    """Joins streamed ``tool_calls`` fragments (keyed by ``index``) into whole calls."""

    def __init__(self) -> None:
        self._parts: dict[int, dict] = {}

    def __bool__(self) -> bool:
        return bool(self._parts)

    def add(self, fragments: Iterable[Any]) -> None:
        for fragment in fragments:
            fragment = fragment if isinstance(fragment, dict) else _as_dict(fragment)
            index = fragment.get("index")
            if not isinstance(index, int):
                index = len(self._parts)
            part = self._parts.setdefault(index, {"id": "", "name": "", "arguments": ""})
            if fragment.get("id"):
                part["id"] = fragment["id"]
            function = fragment.get("function") or {}
            if function.get("name"):
                part["name"] += function["name"]
            if function.get("arguments"):
                part["arguments"] += function["arguments"]

    def calls(self, prefix: str = "call") -> tuple[NativeCall, ...]:
        return tuple(
            NativeCall(id=part["id"] or f"{prefix}_{index}", name=part["name"], arguments=part["arguments"])
            for index, part in sorted(self._parts.items())
        )


def scripted_reply(entry: Any) -> tuple[str, tuple[NativeCall, ...]]:
    """A DEBUG_MOCK_RESPONSES entry as (content, native calls)."""
    if isinstance(entry, str):
        return entry, ()
    return entry.get("content") or "", calls_of(entry.get("tool_calls"), prefix="mock_call")


def check_scripted(entry: Any, index: int) -> Any:
    """A valid DEBUG_MOCK_RESPONSES entry, or ValueError naming what is wrong with it."""
    if isinstance(entry, str):
        return entry
    where = f"DEBUG_MOCK_RESPONSES[{index}]"
    if not isinstance(entry, dict):
        raise ValueError(f"{where} must be a string or an object with content and/or tool_calls")
    unknown = set(entry) - {"content", "tool_calls"}
    if unknown:
        raise ValueError(f"{where} has unknown keys {sorted(unknown)} (allowed: content, tool_calls)")
    if not isinstance(entry.get("content", ""), str):
        raise ValueError(f"{where}.content must be a string")
    calls = entry.get("tool_calls", [])
    if not isinstance(calls, list):
        raise ValueError(f"{where}.tool_calls must be a list")
    for number, call in enumerate(calls):
        function = call.get("function") if isinstance(call, dict) and isinstance(call.get("function"), dict) else call
        if not isinstance(function, dict) or not isinstance(function.get("name"), str) or not function["name"]:
            raise ValueError(f"{where}.tool_calls[{number}] needs a name (a string)")
        if not isinstance(function.get("arguments", {}), (dict, str)):
            raise ValueError(f"{where}.tool_calls[{number}].arguments must be an object (or a JSON string)")
    return entry

"""DEBUG_MOCK_RESPONSES: what a valid entry is (the settings check each one when they are read).

An entry is a reply text, or an object ``{"content": "...", "tool_calls": [...]}`` whose calls
are ``{"name", "arguments"}`` (``id`` optional) or OpenAI's ``{"id", "type": "function",
"function": {"name", "arguments"}}``; kaos_runtime.clients.tool_calls reads them.
"""

from __future__ import annotations

from typing import Any


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

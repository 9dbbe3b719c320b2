"""A model's native tool calls as they come back (OpenAI ``tool_calls``), pure.

``NativeCall`` is one call; ``calls_of`` reads the calls of a whole message (OpenAI's form, or
the short form of scripted replies), ``CallAssembler`` joins streamed fragments, and
``scripted_reply`` turns a DEBUG_MOCK_RESPONSES entry into the text and calls a model would
have sent. What the loop makes of a call is kaos_runtime.loop.tool_calling.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable


@dataclass(frozen=True)
class NativeCall:
    """One entry of a model's ``tool_calls``: its id, the function name and the arguments as
    the model wrote them (a JSON text)."""

    id: str
    name: str
    arguments: str

    def message(self) -> dict:
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


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

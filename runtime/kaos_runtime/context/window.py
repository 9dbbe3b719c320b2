"""The model's context window and the room kept for its answer.

From ``MODEL_CONTEXT_WINDOW`` (an Agent's ``spec.config.contextWindow``) when set, else from
litellm's model map (``max_input_tokens``, else ``max_tokens``, of the model's name as it is or
without its provider prefix), else ``DEFAULT_WINDOW``. The map is read as data, reduced to the
two numbers per entry as it is parsed (as clients/function_calling.py reads it), once.
The answer's room: the map's ``max_output_tokens`` (``DEFAULT_ANSWER`` when it has none), at most
a quarter of the window.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..clients.function_calling import model_map_path

DEFAULT_WINDOW = 8192
DEFAULT_ANSWER = 1024


class Limits(NamedTuple):
    window: int
    output: int


@dataclass(frozen=True)
class Window:
    tokens: int  # the context window
    answer: int  # kept for the answer
    source: str  # where the window came from: MODEL_CONTEXT_WINDOW, the model map, the default

    @property
    def input(self) -> int:
        """What the messages (and the tools offered) may cost."""
        return self.tokens - self.answer


def _number(value: Any) -> int:
    return value if type(value) is int and value > 0 else 0


def _reduce(pairs: list[tuple[str, Any]]) -> Any:
    keys = dict(pairs)
    if "max_input_tokens" in keys or "max_tokens" in keys or "max_output_tokens" in keys:
        return Limits(_number(keys.get("max_input_tokens")) or _number(keys.get("max_tokens")),
                      _number(keys.get("max_output_tokens")))
    return {key: value for key, value in pairs if type(value) is Limits}


def model_limits(model_map: bytes | str) -> dict[str, Limits]:
    """Each model of a model map (JSON text) with its window and output limit."""
    parsed = json.loads(model_map, object_pairs_hook=_reduce)
    return parsed if isinstance(parsed, dict) else {}


def limits_of(model_name: str, limits: dict[str, Limits]) -> Limits | None:
    found = limits.get(model_name)
    if found is None and "/" in model_name:
        found = limits.get(model_name.split("/", 1)[1])
    return found if found is not None and found.window else None


def window_for(model_name: str, configured: int, limits: dict[str, Limits]) -> Window:
    """The window of a model: configured (non-zero) first, then the map, then the default."""
    known = limits_of(model_name, limits)
    output = known.output if known is not None and known.output else DEFAULT_ANSWER
    if configured:
        tokens, source = configured, "MODEL_CONTEXT_WINDOW"
    elif known is not None:
        tokens, source = known.window, "litellm's model map"
    else:
        tokens, source = DEFAULT_WINDOW, "the default"
    return Window(tokens, min(output, tokens // 4), source)


def load_limits() -> dict[str, Limits]:
    """The installed litellm's model map, reduced (blocking; none without litellm)."""
    path = model_map_path()
    if path is None:
        return {}
    with open(path, "rb") as source:
        return model_limits(source.read())

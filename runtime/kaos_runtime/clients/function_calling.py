"""Whether a model takes OpenAI ``tools``: litellm's model map, read as data (litellm is not imported).

litellm ships its model map (``model_prices_and_context_window_backup.json``, about 3 MB) in
its package. Reading it and keeping only the names marked ``supports_function_calling`` takes
30-100 ms and leaves a set of a few thousand names (+1.2 MiB RSS; each entry is reduced to one
flag as the parser closes it, so the whole map is never held: ``json.load`` of it would leave
+10.7 MiB), against seconds and more than 100 MiB for importing litellm to ask
``litellm.supports_function_calling``. A name
matches as it is (``gpt-4o-mini``, ``ollama/llama3.1``) or without its provider prefix
(``openai/gpt-4o``); litellm's per-provider rules on top of the map are not reproduced (see
docs/runtime.md, "Native tool calling"). MODEL_TOOL_CALLING=native/fenced overrides the guess.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
from typing import Any, Iterable, NamedTuple

log = logging.getLogger("kaos_runtime.model")

MODEL_MAP = "model_prices_and_context_window_backup.json"


class _Object(NamedTuple):
    """A JSON object of the map, reduced as it is parsed: whether it says
    ``supports_function_calling``, and which of its members (entries) do."""

    calls: bool
    names: frozenset[str]


_NONE: frozenset[str] = frozenset()


def _reduce(pairs: list[tuple[str, Any]]) -> _Object:
    calls, names = False, []
    for key, value in pairs:
        if key == "supports_function_calling" and value is True:
            calls = True
        elif type(value) is _Object and value.calls:
            names.append(key)
    return _Object(calls, frozenset(names) if names else _NONE)


def function_calling_names(model_map: bytes | str) -> frozenset[str]:
    """The names of a model map (JSON text) whose entry says ``supports_function_calling``."""
    parsed = json.loads(model_map, object_pairs_hook=_reduce)
    return parsed.names if type(parsed) is _Object else _NONE


def supports_function_calling(model_name: str, names: Iterable[str] | frozenset[str]) -> bool:
    """``model_name`` as it is, or without its provider prefix, is among ``names``."""
    if model_name in names:
        return True
    _, slash, bare = model_name.partition("/")
    return bool(slash) and bare in names


def litellm_file(*parts: str) -> str | None:
    """A file or folder inside the installed litellm package (found without importing it)."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(spec.submodule_search_locations[0], *parts)
    return path if os.path.exists(path) else None


def model_map_path() -> str | None:
    """The model map inside the installed litellm package."""
    return litellm_file(MODEL_MAP)


def load_function_calling_names() -> frozenset[str]:
    """The names of the installed litellm's model map (none, with a warning, without it)."""
    path = model_map_path()
    if path is None:
        log.warning("litellm's model map is not installed: MODEL_TOOL_CALLING=auto offers tools as text")
        return frozenset()
    with open(path, "rb") as source:
        return function_calling_names(source.read())

"""The message a run sends: ``spec.message`` with ``{{ .body }}`` placeholders filled in.

Only two forms are placeholders: ``{{ .body }}``, the raw request body (UTF-8), and
``{{ .body.a.b }}``, a field of the JSON body (a string as it is, anything else as JSON, a list
item by its index, nothing when absent). The text is substituted with a regular expression:
there is no template engine, no expression and no attribute access, so a payload cannot run
anything, and text in the payload that looks like a placeholder stays text.
"""

from __future__ import annotations

import json
import re
from typing import Any

PLACEHOLDER = re.compile(r"\{\{\s*(.*?)\s*\}\}")
BODY_PATH = re.compile(r"^\.body((?:\.[A-Za-z0-9_-]+)*)$")
_ABSENT = object()


class MessageError(ValueError):
    """A message with a placeholder that is not ``{{ .body }}`` or ``{{ .body.field }}``."""


def check(template: str) -> None:
    """Raise MessageError for a placeholder this renderer does not fill."""
    for match in PLACEHOLDER.finditer(template):
        if not BODY_PATH.match(match.group(1)):
            raise MessageError(f"message: {match.group(0)!r} is not a placeholder KAOS fills; "
                               "use {{ .body }} or {{ .body.field }}")


def render(template: str, body: bytes | None) -> str:
    """The message for a run; ``body`` is the webhook's raw body (None for other runs)."""
    check(template)
    raw = (body or b"").decode("utf-8", "replace")
    payload: Any = _ABSENT
    if body:
        try:
            payload = json.loads(raw)
        except ValueError:
            pass

    def fill(match: re.Match) -> str:
        path = BODY_PATH.match(match.group(1)).group(1)
        if not path:
            return raw
        value = payload
        for key in path[1:].split("."):
            value = _field(value, key)
        if value is _ABSENT or value is None:
            return ""
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)

    return PLACEHOLDER.sub(fill, template)


def _field(value: Any, key: str) -> Any:
    if isinstance(value, dict):
        return value.get(key, _ABSENT)
    if isinstance(value, list) and key.isdigit() and int(key) < len(value):
        return value[int(key)]
    return _ABSENT

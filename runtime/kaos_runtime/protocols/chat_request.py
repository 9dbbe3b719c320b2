"""Validation of a /v1/chat/completions body (pure functions; errors are 4xx, never 500)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

ROLES = ("system", "user", "assistant", "tool", "developer", "task-delegation")
PROMPT_ROLES = ("user", "task-delegation")
SESSION_HEADER = "X-Session-ID"
# A session id travels in a header (X-Session-ID), so it is visible ASCII, spaces only inside,
# and it is short: it is recorded with every event and echoed in every answer.
SESSION_ID_MAX = 128
SESSION_ID_PATTERN = rf"^[!-~]([ -~]{{0,{SESSION_ID_MAX - 2}}}[!-~])?$"
SESSION_ID_RULE = f"at most {SESSION_ID_MAX} visible ASCII characters (spaces inside)"
_SESSION_ID = re.compile(SESSION_ID_PATTERN)
INT_MAX = 2**31 - 1  # of a query or header integer (limit, the delegation depth)


class BadRequest(Exception):
    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


@dataclass(frozen=True)
class ChatBody:
    messages: list[dict]
    stream: bool
    model: str | None
    session_id: str | None
    include_usage: bool = False  # stream_options.include_usage: a usage chunk ends the stream


def _text(content, index: int) -> str:
    """Message content: a string, or OpenAI content parts whose text parts are joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if not isinstance(part, dict) or not isinstance(part.get("text", ""), str) \
                    or not isinstance(part.get("type", "text"), str):
                raise BadRequest(400, f"messages[{index}].content parts must be objects with a string type and text")
            if part.get("type", "text") == "text":
                texts.append(part.get("text", ""))
        return "".join(texts)
    if content is None:
        return ""
    raise BadRequest(400, f"messages[{index}].content must be a string or a list of content parts")


def parse_chat_body(raw: bytes) -> ChatBody:
    try:
        payload = json.loads(raw)
    except (ValueError, RecursionError) as error:  # RecursionError: nested too deeply
        raise BadRequest(400, f"malformed JSON body: {error}") from None
    if not isinstance(payload, dict):
        raise BadRequest(400, "the body must be a JSON object")
    messages = payload.get("messages")
    if messages is None:
        raise BadRequest(400, "messages is required")
    if not isinstance(messages, list):
        raise BadRequest(400, "messages must be a list")
    if not messages:
        raise BadRequest(400, "messages must not be empty")
    clean = []
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            raise BadRequest(400, f"messages[{index}] must be an object")
        role = message.get("role")
        if not isinstance(role, str) or role not in ROLES:
            raise BadRequest(400, f"messages[{index}].role must be one of {', '.join(ROLES)}")
        clean.append({"role": role, "content": _text(message.get("content"), index)})
    if not any(message["role"] in PROMPT_ROLES for message in clean):
        raise BadRequest(400, "messages must contain a user message")
    stream = _optional(payload, "stream", bool, False, "stream must be a boolean")
    model = payload.get("model")
    if model is not None and not isinstance(model, str):
        raise BadRequest(400, "model must be a string")
    session_id = payload.get("session_id")
    if session_id is not None and (not isinstance(session_id, str) or not _SESSION_ID.fullmatch(session_id)):
        raise BadRequest(400, f"session_id must be a non-empty string of {SESSION_ID_RULE}")
    options = _optional(payload, "stream_options", dict, {}, "stream_options must be an object")
    include_usage = _optional(options, "include_usage", bool, False, "stream_options.include_usage must be a boolean")
    return ChatBody(messages=clean, stream=stream, model=model, session_id=session_id, include_usage=include_usage)


def _optional(found: dict, key: str, kind: type, default, problem: str):
    """``found[key]`` of type ``kind``; missing or null: ``default``; else 400 with ``problem``."""
    value = found.get(key)
    if value is None:
        return default
    if not isinstance(value, kind):
        raise BadRequest(400, problem)
    return value


def is_session_id(value: str) -> bool:
    return bool(_SESSION_ID.fullmatch(value))


def parse_session_header(raw: str | None, header: str) -> str | None:
    """A session id given in a header: None when absent or empty, else it must be one."""
    if not raw:
        return None
    if not _SESSION_ID.fullmatch(raw):
        raise BadRequest(400, f"{header} must be {SESSION_ID_RULE}")
    return raw


def parse_depth(raw: str | None) -> int:
    return _non_negative_int(raw, "X-KAOS-Delegation-Depth") or 0


def parse_limit(raw: str | None) -> int | None:
    return _non_negative_int(raw, "limit")


# Bounds a caller sets on one request, on top of the agent's own (a Trigger's limits).
MAX_STEPS_HEADER = "X-KAOS-Max-Steps"
MAX_TOKENS_HEADER = "X-KAOS-Max-Tokens"
# Set on an answer that a limit cut short: max_steps or max_tokens.
STOPPED_HEADER = "X-KAOS-Stopped"


def parse_bound(raw: str | None, header: str) -> int | None:
    """A request's bound (``X-KAOS-Max-Steps``, ``X-KAOS-Max-Tokens``): None when absent, else at least 1."""
    value = _non_negative_int(raw, header)
    if value == 0:
        raise BadRequest(400, f"{header} must be at least 1")
    return value


def _non_negative_int(raw: str | None, what: str) -> int | None:
    """None when absent or empty; a 400 naming ``what`` when not a non-negative integer."""
    if raw is None or raw == "":
        return None
    # int() alone would take " 5", "+5", "1_0" and other scripts' digits
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 10 and int(raw) <= INT_MAX):
        raise BadRequest(400, f"{what} must be an integer from 0 to {INT_MAX}")
    return int(raw)

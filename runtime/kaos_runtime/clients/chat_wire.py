"""OpenAI chat completions as data, pure: request bodies, whole answers, stream chunks, errors.

What the model clients (``openai_chat``, ``litellm_chat``) and the loop share: ``ModelReply``
(one whole answer), ``Delta`` (a piece of a streamed one), the token counts, and the two model
errors (``TransientModelError`` is worth retrying).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..core.errors import describe
from .tool_calls import NativeCall, calls_of

TRANSIENT_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
USAGE_FIELDS = ("prompt_tokens", "completion_tokens", "total_tokens")


def no_usage() -> dict[str, int]:
    return dict.fromkeys(USAGE_FIELDS, 0)


def usage_dict(usage: Any) -> dict[str, int]:
    """OpenAI's ``usage`` object (zeros for what it lacks, or when there is none)."""
    if not isinstance(usage, dict):
        return no_usage()
    return {name: int(usage.get(name) or 0) for name in USAGE_FIELDS}


@dataclass(frozen=True)
class ModelReply:
    """The text of one model answer, the native tool calls it asks for, and the tokens it cost
    (zeros when the model did not say)."""

    content: str
    usage: dict[str, int] = field(default_factory=no_usage)
    tool_calls: tuple[NativeCall, ...] = ()


@dataclass(frozen=True)
class Delta:
    """A piece of a streamed answer: text, tool-call fragments (OpenAI's streamed form, keyed
    by ``index``), and the usage once the model reports it."""

    content: str = ""
    tool_calls: tuple = ()
    usage: dict[str, int] | None = None


class ModelError(Exception):
    """The model could not answer (after retries)."""


class TransientModelError(ModelError):
    """Worth retrying: connection refused, timeout, 429, 5xx."""


def openai_base_url(model_api_url: str) -> str:
    """MODEL_API_URL is the ModelAPI's base URL; OpenAI-compatible routes live under /v1."""
    url = model_api_url.rstrip("/")
    return url if url.endswith("/v1") else url + "/v1"


def request_body(model: str, messages: list[dict], tools: list[dict] | None, stream: bool) -> dict:
    """A chat completions request; a stream asks for the usage in its last chunk."""
    body: dict[str, Any] = {"model": model, "messages": messages}
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    if tools:
        body["tools"] = tools
    return body


def http_failure(status: int, raw: bytes) -> ModelError:
    """The error for an HTTP error answer: transient (retried) for 408/409/425/429/5xx."""
    message = f"the model API answered HTTP {status}: {raw[:300].decode(errors='replace')}"
    return (TransientModelError if status in TRANSIENT_STATUS else ModelError)(message)


def _error_text(error: Any) -> str:
    return str(error.get("message") or error) if isinstance(error, dict) else str(error)


def _text(content: Any) -> str:
    """A message's ``content``: a string, or a list of parts whose text parts are joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text") or "" for part in content if isinstance(part, dict))
    return ""


def reply_of(payload: Any) -> ModelReply:
    """A ``chat.completion`` (parsed JSON) -> ModelReply; anything else -> ModelError."""
    if isinstance(payload, dict) and "error" in payload and not payload.get("choices"):
        raise ModelError(f"the model API answered with an error: {_error_text(payload['error'])}")
    try:
        message = payload["choices"][0]["message"]
        if not isinstance(message, dict):
            raise TypeError(f"message is {type(message).__name__}")
    except (KeyError, IndexError, TypeError) as error:
        raise ModelError(f"the model API sent an answer that is not a chat completion: {describe(error)}") from None
    return ModelReply(_text(message.get("content")), usage_dict(payload.get("usage")),
                      calls_of(message.get("tool_calls")))


def delta_of(chunk: dict) -> Delta:
    """A ``chat.completion.chunk`` (as JSON) -> Delta; an ``error`` object -> ModelError."""
    if "error" in chunk and not chunk.get("choices"):
        raise ModelError(f"the model API failed mid-stream: {_error_text(chunk['error'])}")
    content, calls = "", ()
    choices = chunk.get("choices") or ()
    if choices:
        delta = choices[0].get("delta") or {}
        content = _text(delta.get("content"))
        calls = tuple(delta.get("tool_calls") or ())
    usage = chunk.get("usage")
    return Delta(content, calls, usage_dict(usage) if isinstance(usage, dict) else None)


def scripted_delta(calls: tuple[NativeCall, ...]) -> tuple:
    """Whole native calls as the fragments of a stream."""
    return tuple({"index": index, "id": call.id, "type": "function",
                  "function": {"name": call.name, "arguments": call.arguments}} for index, call in enumerate(calls))

"""OpenAI-compatible response bodies (pure functions)."""

from __future__ import annotations

import time
import uuid


def completion_id() -> str:
    return "chatcmpl-" + uuid.uuid4().hex


def completion(model: str, content: str, session_id: str, usage: dict[str, int]) -> dict:
    return {
        "id": completion_id(),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
        ],
        "usage": usage,
        "session_id": session_id,
    }


def unavailable(error: Exception) -> dict:
    """The OpenAI-style error body of a 503 the client may retry shortly (the agent's shared
    memory cannot be reached): the plain answer's body and a stream's error frame alike."""
    return {"error": {"message": f"{error}; try again shortly", "type": "service_unavailable", "code": 503}}


def interrupted(error: Exception) -> dict:
    """The OpenAI-style error body when the process stops while the request waits for an approval."""
    return {"error": {"message": str(error), "type": "approval_interrupted", "code": 503}}

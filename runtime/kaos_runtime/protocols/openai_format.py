"""OpenAI-compatible response bodies (pure functions)."""

from __future__ import annotations

import json
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


def stream_events(model: str, content: str) -> list[bytes]:
    """SSE frames: a role chunk, the whole content in one chunk, a finish chunk, [DONE]."""
    base = {"id": completion_id(), "object": "chat.completion.chunk", "created": int(time.time()), "model": model}
    chunks = [
        {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
    frames = [f"data: {json.dumps(chunk, separators=(',', ':'))}\n\n".encode() for chunk in chunks]
    frames.append(b"data: [DONE]\n\n")
    return frames

"""A small OpenAI-compatible model server: the only stand-in the tests use.

Run it as a process: ``python -m tests.support.mock_model --port 9100`` (HOST/PORT env work
too). It answers ``POST /v1/chat/completions`` (plain and streaming), ``GET /v1/models`` and
``GET /health``. By default a reply echoes the last user message (``echo: <text>``).

Tests steer it over HTTP:
- ``POST /_mock/script`` with ``{"replies": [...]}`` queues replies. A string is the content of
  one reply; ``{"status": 503}`` answers that HTTP error once (to exercise retries).
- ``GET /_mock/requests`` returns the request bodies received so far (newest last);
  ``DELETE /_mock/requests`` clears them and the script.

It is written directly on asyncio (no framework) so that it costs well under a
millisecond per call and benchmarks measure the agent, not the mock.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from collections import deque

MAX_BODY = 16 * 1024 * 1024
KEEP_REQUESTS = 1000


class MockState:
    def __init__(self) -> None:
        self.script: deque = deque()
        self.requests: deque = deque(maxlen=KEEP_REQUESTS)
        self.counter = 0


def _last_user_text(messages: list) -> str:
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else json.dumps(content)
    return ""


def _completion(model: str, content: str, number: int) -> dict:
    return {
        "id": f"chatcmpl-mock-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def _chunks(model: str, content: str, number: int) -> list[dict]:
    base = {"id": f"chatcmpl-mock-{number}", "object": "chat.completion.chunk",
            "created": int(time.time()), "model": model}
    return [
        {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]


def _response(status: int, body: bytes, content_type: str = "application/json") -> bytes:
    reason = {200: "OK", 400: "Bad Request", 404: "Not Found"}.get(status, "Error")
    head = (f"HTTP/1.1 {status} {reason}\r\ncontent-type: {content_type}\r\n"
            f"content-length: {len(body)}\r\n\r\n")
    return head.encode() + body


def _json(status: int, payload) -> bytes:
    return _response(status, json.dumps(payload).encode())


class MockModelServer:
    def __init__(self) -> None:
        self.state = MockState()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                request = await _read_request(reader)
                if request is None:
                    break
                method, path, body = request
                writer.write(self.route(method, path, body))
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, ValueError):
            pass
        finally:
            writer.close()

    def route(self, method: str, path: str, body: bytes) -> bytes:
        path = path.split("?", 1)[0]
        if method == "POST" and path.endswith("/chat/completions"):
            return self.chat(body)
        if method == "GET" and path.endswith("/models"):
            return _json(200, {"object": "list", "data": [{"id": "mock", "object": "model", "owned_by": "mock"}]})
        if method == "GET" and path == "/health":
            return _json(200, {"status": "healthy"})
        if path == "/_mock/script" and method == "POST":
            self.state.script.extend(json.loads(body or b"{}").get("replies", []))
            return _json(200, {"queued": len(self.state.script)})
        if path == "/_mock/requests" and method == "GET":
            return _json(200, {"requests": list(self.state.requests)})
        if path == "/_mock/requests" and method == "DELETE":
            self.state.requests.clear()
            self.state.script.clear()
            return _json(200, {"cleared": True})
        return _json(404, {"error": {"message": f"no route {method} {path}"}})

    def chat(self, body: bytes) -> bytes:
        try:
            request = json.loads(body)
        except ValueError:
            return _json(400, {"error": {"message": "malformed JSON"}})
        self.state.requests.append(request)
        self.state.counter += 1
        reply = self.state.script.popleft() if self.state.script else None
        if isinstance(reply, dict) and "status" in reply:
            return _json(int(reply["status"]), {"error": {"message": "scripted failure"}})
        content = reply if isinstance(reply, str) else "echo: " + _last_user_text(request.get("messages") or [])
        model = request.get("model") or "mock"
        if request.get("stream"):
            events = "".join(f"data: {json.dumps(c)}\n\n" for c in _chunks(model, content, self.state.counter))
            return _response(200, (events + "data: [DONE]\n\n").encode(), "text/event-stream")
        return _json(200, _completion(model, content, self.state.counter))


async def _read_request(reader: asyncio.StreamReader):
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    if length > MAX_BODY:
        raise ValueError("body too large")
    body = await reader.readexactly(length) if length else b""
    return method, path, body


async def serve(host: str, port: int) -> None:
    server = MockModelServer()
    listener = await asyncio.start_server(server.handle, host, port)
    async with listener:
        await listener.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "9100")))
    args = parser.parse_args()
    try:
        import uvloop
        uvloop.install()
    except ImportError:
        pass
    try:
        asyncio.run(serve(args.host, args.port))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()

"""A small OpenAI-compatible model server: the only stand-in the tests use.

Run it as a process: ``python -m tests.support.mock_model --port 9100`` (HOST/PORT env work
too). It answers ``POST /v1/chat/completions`` (plain and streaming), ``GET /v1/models`` and
``GET /health``. By default a reply echoes the last user message (``echo: <text>``).

Tests steer it over HTTP:
- ``POST /_mock/script`` with ``{"replies": [...]}`` queues replies. A string is the content of
  one reply; ``{"status": 503}`` answers that HTTP error once (to exercise retries). An object
  may also hold:
  - ``"tool_calls": [{"name": "echo", "arguments": {...}}, ...]`` (and ``"content"``): a
    native tool-call reply (``message.tool_calls``; streamed as ``delta.tool_calls``);
  - ``"parts": ["Hel", "lo"]``: the content in pieces; a streamed reply sends one chunk per
    piece, ``"interval": 0.05`` seconds apart;
  - ``"gate": "g1"``: a streamed reply sends its first piece, then waits until
    ``POST /_mock/release`` with ``{"gate": "g1"}`` before the rest (no timing involved); a
    plain reply waits for the release before it answers at all.
- ``GET /_mock/requests`` returns the request bodies received so far (newest last);
  ``DELETE /_mock/requests`` clears them, the script, the streams and the released gates.
- ``POST /_mock/echo_for`` with ``{"system_contains": "..."}``: requests whose system message
  contains the text are answered with the echo and leave the script alone (a summarizer's calls
  in between scripted ones).
- ``POST /_mock/limit`` with ``{"max_prompt_tokens": N}``: every request is counted with tiktoken's
  o200k_base (the file litellm's package ships; never downloaded): 4 tokens per message plus its
  text and its tool calls (compact JSON), the tools offered (compact JSON), 3 per request. One
  over N is answered 400 ``context_length_exceeded``, as OpenAI does; ``GET /_mock/limit`` gives
  ``{"max_prompt_tokens", "largest", "over", "counted"}``. The count is the usage's prompt_tokens.
- ``GET /_mock/streams``: every streamed (or gated) reply ``{"number", "sent", "parts",
  "completed", "disconnected"}``: how many pieces went out, and whether the client stayed to
  the end or closed the connection early.

Streamed replies end with a ``usage`` chunk when the request asks for
``stream_options.include_usage`` (one prompt token, one completion token per piece).

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
        self.streams: deque = deque(maxlen=KEEP_REQUESTS)
        self.gates: dict[str, asyncio.Event] = {}
        self.counter = 0
        self.echo_for: list[str] = []
        self.limit = 0
        self.sizes = {"largest": 0, "over": 0, "counted": 0}
        self.encoding = None

    def prompt_tokens(self, request: dict) -> int:
        if self.encoding is None:
            import importlib.util

            import tiktoken

            litellm = importlib.util.find_spec("litellm").submodule_search_locations[0]
            os.environ.setdefault("TIKTOKEN_CACHE_DIR", os.path.join(litellm, "litellm_core_utils", "tokenizers"))
            self.encoding = tiktoken.get_encoding("o200k_base")

        def count(text: str) -> int:
            return len(self.encoding.encode(text, disallowed_special=()))

        total = 3 + (count(json.dumps(request["tools"], separators=(",", ":"))) if request.get("tools") else 0)
        for message in request.get("messages") or []:
            content = message.get("content")
            total += 4 + (count(content if isinstance(content, str) else json.dumps(content)) if content else 0)
            if message.get("tool_calls"):
                total += count(json.dumps(message["tool_calls"], separators=(",", ":")))
        return total

    def gate(self, name: str) -> asyncio.Event:
        return self.gates.setdefault(name, asyncio.Event())


def _last_user_text(messages: list) -> str:
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else json.dumps(content)
    return ""


def _tool_calls(reply) -> list[dict]:
    """A scripted reply's native tool calls in OpenAI's form."""
    calls = []
    for index, call in enumerate(reply.get("tool_calls") or [] if isinstance(reply, dict) else []):
        function = call.get("function") or call
        arguments = function.get("arguments", {})
        calls.append({"id": call.get("id") or f"call_mock_{index}", "type": "function",
                      "function": {"name": function["name"],
                                   "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments)}})
    return calls


def _completion(model: str, content: str, number: int, tool_calls: list[dict] | None = None) -> dict:
    message = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": f"chatcmpl-mock-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop"}
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


def _sse(payload) -> bytes:
    data = payload if isinstance(payload, str) else json.dumps(payload)
    return f"data: {data}\n\n".encode()


def _chunked(data: bytes) -> bytes:
    """One HTTP/1.1 chunk (transfer-encoding: chunked)."""
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


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
                answer = self.route(method, path, body)
                if isinstance(answer, bytes):
                    writer.write(answer)
                    await writer.drain()
                elif not await self.stream(answer, reader, writer):
                    break
        except (ConnectionError, asyncio.IncompleteReadError, ValueError):
            pass
        finally:
            writer.close()

    async def stream(self, plan: dict, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Send a streamed reply piece by piece (chunked encoding); False when the client left."""
        record, chunked = plan["record"], plan["chunked"]
        if chunked:
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
        eof = asyncio.ensure_future(reader.read(1))  # completes (b"") when the client closes
        try:
            for index, event in enumerate(plan["events"]):
                wait = plan["waits"][index]
                if wait is not None:
                    waiting = asyncio.ensure_future(wait())
                    await asyncio.wait((waiting, eof), return_when=asyncio.FIRST_COMPLETED)
                    waiting.cancel()
                if eof.done():
                    record["disconnected"] = True
                    return False
                writer.write(_chunked(event) if chunked else event)
                await writer.drain()
                if plan["piece"][index]:
                    record["sent"] += 1
            if chunked:
                writer.write(b"0\r\n\r\n")
                await writer.drain()
            record["completed"] = True
            return True
        except ConnectionError:
            record["disconnected"] = True
            return False
        finally:
            eof.cancel()

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
            self.state.streams.clear()
            self.state.gates.clear()
            self.state.echo_for.clear()
            self.state.limit = 0
            return _json(200, {"cleared": True})
        if path == "/_mock/echo_for" and method == "POST":
            self.state.echo_for.append(json.loads(body or b"{}")["system_contains"])
            return _json(200, {"echo_for": self.state.echo_for})
        if path == "/_mock/limit" and method == "POST":
            self.state.limit = int(json.loads(body or b"{}")["max_prompt_tokens"])
            self.state.sizes = {"largest": 0, "over": 0, "counted": 0}
            return _json(200, {"max_prompt_tokens": self.state.limit})
        if path == "/_mock/limit" and method == "GET":
            return _json(200, {"max_prompt_tokens": self.state.limit, **self.state.sizes})
        if path == "/_mock/streams" and method == "GET":
            return _json(200, {"streams": list(self.state.streams)})
        if path == "/_mock/release" and method == "POST":
            self.state.gate(json.loads(body or b"{}").get("gate", "")).set()
            return _json(200, {"released": True})
        return _json(404, {"error": {"message": f"no route {method} {path}"}})

    def chat(self, body: bytes) -> bytes:
        try:
            request = json.loads(body)
        except ValueError:
            return _json(400, {"error": {"message": "malformed JSON"}})
        self.state.requests.append(request)
        self.state.counter += 1
        prompt_tokens = 1
        if self.state.limit:
            prompt_tokens = self.state.prompt_tokens(request)
            sizes = self.state.sizes
            sizes["counted"] += 1
            sizes["largest"] = max(sizes["largest"], prompt_tokens)
            if prompt_tokens > self.state.limit:
                sizes["over"] += 1
                return _json(400, {"error": {
                    "message": f"This model's maximum context length is {self.state.limit} tokens. However, your "
                               f"messages resulted in {prompt_tokens} tokens.",
                    "type": "invalid_request_error", "code": "context_length_exceeded"}})
        system = next((m.get("content") for m in request.get("messages") or []
                       if isinstance(m, dict) and m.get("role") == "system"), "")
        unscripted = isinstance(system, str) and any(text in system for text in self.state.echo_for)
        reply = self.state.script.popleft() if self.state.script and not unscripted else None
        if isinstance(reply, dict) and "status" in reply:
            return _json(int(reply["status"]), {"error": {"message": "scripted failure"}})
        echo = "echo: " + _last_user_text(request.get("messages") or [])
        parts = reply.get("parts") if isinstance(reply, dict) else None
        if isinstance(reply, str):
            content = reply
        elif isinstance(reply, dict):
            content = "".join(parts) if parts else reply.get("content", "" if reply.get("tool_calls") else echo)
        else:
            content = echo
        model = request.get("model") or "mock"
        calls = _tool_calls(reply)
        if request.get("stream"):
            if isinstance(reply, dict):
                return self.streamed(request, model, parts or ([content] if content else []), calls, reply)
            events = "".join(f"data: {json.dumps(c)}\n\n" for c in _chunks(model, content, self.state.counter))
            if (request.get("stream_options") or {}).get("include_usage"):
                events += _sse(self._usage_chunk(model, 1)).decode()
            return _response(200, (events + "data: [DONE]\n\n").encode(), "text/event-stream")
        completion = _completion(model, content, self.state.counter, calls)
        completion["usage"]["prompt_tokens"] = prompt_tokens
        completion["usage"]["total_tokens"] = prompt_tokens + 1
        answer = _json(200, completion)
        if isinstance(reply, dict) and reply.get("gate") is not None:
            record = {"number": self.state.counter, "sent": 0, "parts": 1, "completed": False, "disconnected": False}
            self.state.streams.append(record)
            return {"events": [answer], "waits": [self.state.gate(str(reply["gate"])).wait], "piece": [True],
                    "record": record, "chunked": False}
        return answer

    def _usage_chunk(self, model: str, pieces: int) -> dict:
        return {"id": f"chatcmpl-mock-{self.state.counter}", "object": "chat.completion.chunk",
                "created": int(time.time()), "model": model, "choices": [],
                "usage": {"prompt_tokens": 1, "completion_tokens": pieces, "total_tokens": 1 + pieces}}

    def streamed(self, request: dict, model: str, parts: list[str], calls: list[dict], reply: dict) -> dict:
        """The plan of a streamed reply: its SSE events and what to wait for before each."""
        base = {"id": f"chatcmpl-mock-{self.state.counter}", "object": "chat.completion.chunk",
                "created": int(time.time()), "model": model}

        def chunk(delta: dict, finish=None) -> bytes:
            return _sse({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

        interval = float(reply.get("interval") or 0)
        gate = reply.get("gate")
        events, waits, piece = [chunk({"role": "assistant", "content": ""})], [None], [False]
        for index, part in enumerate(parts):
            events.append(chunk({"content": part}))
            piece.append(True)
            if index == 1 and gate is not None:
                waits.append(self.state.gate(str(gate)).wait)
            elif index > 0 and interval:
                waits.append(lambda: asyncio.sleep(interval))
            else:
                waits.append(None)
        for index, call in enumerate(calls):
            events.append(chunk({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                                 "function": {"name": call["function"]["name"], "arguments": ""}}]}))
            events.append(chunk({"tool_calls": [{"index": index,
                                                 "function": {"arguments": call["function"]["arguments"]}}]}))
            waits += [None, None]
            piece += [False, False]
        events.append(chunk({}, "tool_calls" if calls else "stop"))
        if (request.get("stream_options") or {}).get("include_usage"):
            events.append(_sse(self._usage_chunk(model, max(1, len(parts)))))
        events.append(_sse("[DONE]"))
        waits += [None] * (len(events) - len(waits))
        piece += [False] * (len(events) - len(piece))
        record = {"number": self.state.counter, "sent": 0, "parts": len(parts), "completed": False,
                  "disconnected": False}
        self.state.streams.append(record)
        return {"events": events, "waits": waits, "piece": piece, "record": record, "chunked": True}


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

"""True streaming: ``ChatStream``, the ASGI response of a ``stream: true`` chat request.

It sends the role chunk at once, runs the agentic loop with an ``SseSink`` that writes a
``chat.completion.chunk`` per piece of the answer (the loop's ``StepGate`` decides which pieces
are the answer, kaos_runtime.loop.step_gate), listens for the client going away meanwhile (and
then cancels the loop, so the model stream, tool calls and delegations it started stop), and
ends with the ``finish_reason`` chunk, the ``usage`` chunk when the client asked for it
(``stream_options.include_usage``), and ``data: [DONE]``. A spent budget or an unreachable
memory met once the 200 is sent is one OpenAI-style error frame before that end (and the
request's metric outcome is what the status would have said: ``budget_exceeded``, ``error``; a
client that went away: ``cancelled``).

A plain request gets the same from ``chat_plain.PlainChat``: when its client (a user, or a
coordinator that delegated to this agent and was itself cancelled) goes away, the work stops.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Awaitable, Callable

from ..approvals import ApprovalInterrupted
from ..budget import BudgetExceeded
from ..clients.model import no_usage
from ..core.errors import describe
from ..core.metrics import BUDGET_EXCEEDED, CANCELLED, ERROR, set_outcome
from ..memory import MemoryUnavailable
from .openai_format import completion_id, interrupted, unavailable

log = logging.getLogger("kaos_runtime.streaming")

# While a call waits for an approval, an SSE comment this often keeps proxies from closing the stream.
KEEPALIVE_SECONDS = 10.0

def _frame(payload: dict) -> bytes:
    return b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"


class ClientGone(Exception):
    """The client closed the connection while the answer was being streamed."""


class SseSink:
    """Writes each piece of the answer as one ``chat.completion.chunk``; while a call waits for
    an approval, announces it once (a chunk with an empty delta and ``kaos_approval``) and sends
    an SSE comment ``: approval pending <id>`` at once and every ``KEEPALIVE_SECONDS``."""

    def __init__(self, send, model: str) -> None:
        self._send = send
        self._base = {"id": completion_id(), "object": "chat.completion.chunk", "created": int(time.time()),
                      "model": model}
        self.sent = False
        self._keepalives: dict[str, asyncio.Task] = {}

    def chunk(self, delta: dict, finish: str | None = None) -> bytes:
        return _frame({**self._base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    def usage_chunk(self, usage: dict[str, int]) -> bytes:
        return _frame({**self._base, "choices": [], "usage": usage})

    async def write(self, body: bytes) -> None:
        try:
            await self._send({"type": "http.response.body", "body": body, "more_body": True})
        except OSError as error:  # uvicorn's ClientDisconnected
            raise ClientGone() from error

    async def text(self, content: str) -> None:
        if content:
            self.sent = True
            await self.write(self.chunk({"content": content}))

    async def approval_pending(self, approval) -> None:
        announce = {**self._base, "choices": [{"index": 0, "delta": {}, "finish_reason": None}],
                    "kaos_approval": approval.view(time.time())}
        await self.write(_frame(announce) + self._comment(approval.id))
        self._keepalives[approval.id] = asyncio.create_task(self._keep_alive(approval.id))

    async def approval_settled(self, approval) -> None:
        task = self._keepalives.pop(approval.id, None)
        if task is not None:
            task.cancel()

    @staticmethod
    def _comment(approval_id: str) -> bytes:
        return f": approval pending {approval_id}\n\n".encode()

    async def _keep_alive(self, approval_id: str) -> None:
        while True:
            await asyncio.sleep(KEEPALIVE_SECONDS)
            try:
                await self.write(self._comment(approval_id))
            except ClientGone:
                return  # the stream's own watcher sees the client go

    def close(self) -> None:
        for task in self._keepalives.values():
            task.cancel()
        self._keepalives.clear()


async def disconnected(receive) -> None:
    """Returns once the client has gone away (after the body has been read, the server answers
    ``receive`` only then)."""
    while (await receive())["type"] != "http.disconnect":
        pass


class ChatStream:
    """The ASGI response of a streaming chat request (see the module docstring).

    ``run(sink)`` runs the agentic loop and returns its Answer, having passed the answer's
    text to the sink as it was produced.
    """

    def __init__(self, run: Callable[[SseSink], Awaitable], model: str, include_usage: bool,
                 headers: dict[str, str]) -> None:
        self.run = run
        self.model = model
        self.include_usage = include_usage
        self.headers = headers

    async def __call__(self, scope, receive, send) -> None:
        headers = [(b"content-type", b"text/event-stream; charset=utf-8"), (b"cache-control", b"no-cache")]
        headers += [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in self.headers.items()]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        sink = SseSink(send, self.model)
        work = asyncio.ensure_future(self._work(sink, scope))
        gone = asyncio.ensure_future(disconnected(receive))
        try:
            await asyncio.wait((work, gone), return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not work.done():  # the client went away (or this response was cancelled)
                set_outcome(scope, CANCELLED)
                work.cancel()
                await asyncio.gather(work, return_exceptions=True)
            gone.cancel()
        if not work.cancelled() and work.exception() is not None:  # ClientGone: a write found the client gone
            set_outcome(scope, CANCELLED)
            log.debug("client gone mid-stream: %s", describe(work.exception()))  # nobody is listening any more

    async def _work(self, sink: SseSink, scope: dict) -> None:
        await sink.write(sink.chunk({"role": "assistant", "content": ""}))
        try:
            usage = (await self.run(sink)).usage
        except (ClientGone, asyncio.CancelledError):
            raise
        except BudgetExceeded as error:  # the 429 of a plain request, met at a later model call
            log.warning("streamed request stopped: %s", error)
            set_outcome(scope, BUDGET_EXCEEDED)
            await sink.write(_frame(error.body()))
            usage = no_usage()
        except ApprovalInterrupted as error:  # the process stops while a call waits: the 503 of a plain request
            log.warning("streamed request stopped: %s", error)
            set_outcome(scope, ERROR)
            await sink.write(_frame(interrupted(error)))
            usage = no_usage()
        except MemoryUnavailable as error:  # the 503 of a plain request, once the stream has begun
            log.warning("streamed request stopped: %s", error)
            set_outcome(scope, ERROR)
            await sink.write(_frame(unavailable(error)))
            usage = no_usage()
        except Exception as error:  # a fault of the runtime itself: say so, as the 500 of a plain request does
            log.exception("streamed request failed")
            await sink.write(sink.chunk({"content": f"internal error: {describe(error)}"}))
            usage = no_usage()
        finally:
            sink.close()
        tail = sink.chunk({}, "stop")
        if self.include_usage:
            tail += sink.usage_chunk(usage)
        await sink.write(tail + b"data: [DONE]\n\n")
        try:
            await sink._send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:
            pass

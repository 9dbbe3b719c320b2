"""``PlainChat``, the ASGI response of a plain (``stream: false``) chat request.

A run is answered as any JSON response, the app's exception handlers giving its errors their
status (400, 429, 503, 500), unless one of its calls waits for an approval for longer than
``KEEPALIVE_SECONDS``: such a wait can take minutes, and proxies with short idle timeouts would
close the idle request. So the response starts then (200, ``application/json``) and sends one
space at once and every ``KEEPALIVE_SECONDS`` until the run ends (JSON allows whitespace before
a value, and clients, ``openai`` included, parse the body as usual), then the completion. The
status is sent by then:
an error met later comes as its OpenAI-style error body (``{"error": {...}}``, as a stream's
error frame) with the request's metric outcome set as its status would have set it, and
``X-KAOS-Stopped`` is not sent. A client that goes away cancels the run, as for any request
(its metric outcome: ``cancelled``).
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Awaitable, Callable

from fastapi.responses import Response

from ..approvals import ApprovalInterrupted
from ..budget import BudgetExceeded
from ..core.errors import describe
from ..core.metrics import BUDGET_EXCEEDED, CANCELLED, ERROR, set_outcome
from ..memory import MemoryUnavailable
from .chat_stream import KEEPALIVE_SECONDS, disconnected
from .openai_format import interrupted, unavailable

log = logging.getLogger("kaos_runtime.chat")


class _Pending:
    """The run's approval watcher: set once a call of the run waits."""

    def __init__(self) -> None:
        self.waiting = asyncio.get_running_loop().create_future()

    async def approval_pending(self, approval) -> None:
        if not self.waiting.done():
            self.waiting.set_result(None)

    async def approval_settled(self, approval) -> None:
        pass


def error_body(error: BaseException, scope: dict) -> dict:
    """What the exception handlers would have answered, for a response already begun."""
    if isinstance(error, BudgetExceeded):
        set_outcome(scope, BUDGET_EXCEEDED)
        return error.body()
    set_outcome(scope, ERROR)
    if isinstance(error, ApprovalInterrupted):
        return interrupted(error)
    if isinstance(error, MemoryUnavailable):
        return unavailable(error)
    log.error("plain chat request failed after its approval wait: %s", describe(error), exc_info=error)
    return {"error": {"message": f"internal error: {describe(error)}", "type": "internal_error", "code": 500}}


class PlainChat:
    """``run(watcher)`` runs the loop and returns its Answer; ``respond(answer)`` is the JSON
    Response of a run that never waited, ``body(answer)`` the completion of one that did."""

    def __init__(self, run: Callable[[_Pending], Awaitable], respond: Callable[[object], Response],
                 body: Callable[[object], dict], headers: dict[str, str]) -> None:
        self.run = run
        self.respond = respond
        self.body = body
        self.headers = headers

    async def __call__(self, scope, receive, send) -> None:
        pending = _Pending()
        work = asyncio.ensure_future(self.run(pending))
        gone = asyncio.ensure_future(disconnected(receive))
        waiting = pending.waiting
        try:
            await asyncio.wait((work, gone, waiting), return_when=asyncio.FIRST_COMPLETED)
            if waiting.done() and not work.done() and not gone.done():  # a decision quicker than this keeps its status
                await asyncio.wait((work, gone), timeout=KEEPALIVE_SECONDS, return_when=asyncio.FIRST_COMPLETED)
            if not work.done() and not gone.done():
                await self._wait_aloud(scope, send, work, gone)
                return
        finally:
            waiting.cancel()
            if not work.done():  # the client went away
                work.cancel()
                await asyncio.gather(work, return_exceptions=True)
            gone.cancel()
        if work.cancelled():
            set_outcome(scope, CANCELLED)
            await Response(status_code=499)(scope, receive, send)  # nobody is listening any more
            return
        await self.respond(work.result())(scope, receive, send)  # its errors go to the app's handlers

    async def _wait_aloud(self, scope, send, work: asyncio.Future, gone: asyncio.Future) -> None:
        headers = [(b"content-type", b"application/json")]
        headers += [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in self.headers.items()]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        while not work.done():
            try:
                await send({"type": "http.response.body", "body": b" ", "more_body": True})
            except OSError:  # uvicorn's ClientDisconnected
                set_outcome(scope, CANCELLED)
                return
            await asyncio.wait((work, gone), timeout=KEEPALIVE_SECONDS, return_when=asyncio.FIRST_COMPLETED)
            if gone.done():
                set_outcome(scope, CANCELLED)
                return
        error = work.exception()
        body = self.body(work.result()) if error is None else error_body(error, scope)
        try:
            await send({"type": "http.response.body", "body": json.dumps(body).encode(), "more_body": False})
        except OSError:
            pass

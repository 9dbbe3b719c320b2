"""At most once: the one retry of an outbound call that the agent makes (tool calls, delegations).

A call that may have reached its server is never sent again: the tool (``pay(100)``) or the peer
may have done its work before the connection dropped, and a second call would do it twice. Only a
failure before anything was sent is retried: the connection refused (a server restarting, a
Service whose new pod kube-proxy does not route to yet), a name that does not resolve yet, an MCP
session that could not be opened. ``retry_unsent`` tries again after each of ``RETRY_DELAYS``
(6 attempts within 3.1 s of waiting), then lets the last failure through.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Awaitable, Callable, TypeVar

from ..core.errors import describe

log = logging.getLogger("kaos_runtime.connect_retry")

RETRY_DELAYS = (0.1, 0.2, 0.4, 0.8, 1.6)  # seconds before the 2nd, 3rd, ... attempt
T = TypeVar("T")


async def retry_unsent(send: Callable[[], Awaitable[T]], unsent: Callable[[BaseException], bool], what: str,
                       pause: Callable[[float], Awaitable[object]] = asyncio.sleep) -> T:
    """``await send()``, again after each of ``RETRY_DELAYS`` while it fails with an error that
    ``unsent`` says reached nothing; any other error, and the last, is raised as it is."""
    for delay in RETRY_DELAYS:
        try:
            return await send()
        except Exception as error:
            if not unsent(error):
                raise
            log.info("%s: nothing sent (%s); trying again in %gs", what, describe(error), delay)
        await pause(delay)
    return await send()

"""The one way tests wait: poll a check with a bound, never sleep for a fixed time.

The default bound is generous: a passing check returns as soon as it holds, and on a loaded
machine (pytest's workers beside the real-cluster tier on two cores) the operator or a process
can take several times its idle time."""

from __future__ import annotations

import asyncio
import time
from typing import Any, Awaitable, Callable

DEFAULT_TIMEOUT = 60.0  # seconds


def wait_until(
    check: Callable[[], Any], timeout: float = DEFAULT_TIMEOUT, interval: float = 0.05, what: str = "condition"
) -> Any:
    """Call ``check()`` until it returns something truthy and return that value.

    Raises AssertionError naming ``what`` and the last value after ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what} not met within {timeout:g}s; last value: {value!r}")
        time.sleep(interval)


async def eventually(
    check: Callable[[], Any | Awaitable[Any]],
    timeout: float = DEFAULT_TIMEOUT,
    interval: float = 0.05,
    what: str = "condition",
) -> Any:
    """The async twin of :func:`wait_until`; ``check`` may be sync or a coroutine function."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what} not met within {timeout:g}s; last value: {value!r}")
        await asyncio.sleep(interval)

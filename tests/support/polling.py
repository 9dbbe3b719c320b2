"""The one way tests wait: poll a check with a bound, never sleep for a fixed time."""

from __future__ import annotations

import asyncio
import time
from typing import Any, Awaitable, Callable


def wait_until(check: Callable[[], Any], timeout: float = 15.0, interval: float = 0.05, what: str = "condition") -> Any:
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
    check: Callable[[], Any | Awaitable[Any]], timeout: float = 15.0, interval: float = 0.05, what: str = "condition"
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

"""Error helpers shared by the outbound clients."""

from __future__ import annotations


def describe(error: BaseException) -> str:
    """A one-line description of an error, looking inside exception groups (anyio, mcp)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    text = str(error).strip()
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


class DelegationError(Exception):
    """A peer could not be reached or did not answer properly (KAOS peers and A2A peers alike)."""

"""Turn the Python source in MCP_TOOLS_STRING into tool functions."""

from __future__ import annotations

import inspect
import traceback
import types

SOURCE_NAME = "<MCP_TOOLS_STRING>"
MODULE_NAME = "kaos_mcp_tools"


class ToolsSourceError(ValueError):
    """MCP_TOOLS_STRING cannot be loaded; the message names the line."""


def _failing_line(error: BaseException) -> int | None:
    for frame in reversed(traceback.extract_tb(error.__traceback__)):
        if frame.filename == SOURCE_NAME:
            return frame.lineno
    return None


def load_tools(source: str, given: dict | None = None) -> list[types.FunctionType]:
    """Run the source as a module; each public function defined in it becomes a tool.
    Helpers, imports and constants in the same source stay visible to the tools, and so do the
    ``given`` names (the server's ``caller``)."""
    try:
        code = compile(source, SOURCE_NAME, "exec")
    except SyntaxError as error:
        raise ToolsSourceError(f"MCP_TOOLS_STRING has a syntax error on line {error.lineno}: {error.msg}") from None
    module = types.ModuleType(MODULE_NAME)
    module.__dict__.update(given or {})
    try:
        exec(code, module.__dict__)
    except Exception as error:
        line = _failing_line(error)
        where = f" on line {line}" if line else ""
        raise ToolsSourceError(f"MCP_TOOLS_STRING failed to load{where}: {type(error).__name__}: {error}") from None
    return [
        value for name, value in vars(module).items()
        if not name.startswith("_") and inspect.isfunction(value) and value.__module__ == MODULE_NAME
    ]

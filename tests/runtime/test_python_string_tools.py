"""kaos_runtime.mcp_server.python_string_tools: MCP_TOOLS_STRING -> tool functions."""

from __future__ import annotations

import pytest

from kaos_runtime.mcp_server.python_string_tools import ToolsSourceError, load_tools


def test_load_tools_keeps_helpers_and_imports_visible():
    tools = load_tools("import math\nfrom os.path import join\n"
                       "def _twice(x):\n    return 2 * x\n"
                       "def root(value: float) -> float:\n    \"\"\"Twice the root.\"\"\"\n    return _twice(math.sqrt(value))\n")
    assert [tool.__name__ for tool in tools] == ["root"]
    assert tools[0](16) == 8


@pytest.mark.parametrize("source, message", [
    ("def ok():\n    return 1\ndef broken(:\n    pass\n", "line 3"),
    ("x = 1\nraise RuntimeError('nope')\n", "line 2"),
])
def test_load_tools_errors_name_the_line(source, message):
    with pytest.raises(ToolsSourceError, match=message):
        load_tools(source)


def test_wrong_mcp_annotations_stop_the_server_in_one_line():
    from kaos_runtime.mcp_server.server import create_mcp_app

    source = 'def f() -> str:\n    return "x"\n\nf.mcp_annotations = {"destructiveHint": "very"}\n'
    with pytest.raises(ToolsSourceError) as refused:
        create_mcp_app(source, "n", "/mcp")
    assert "f.mcp_annotations is not valid (destructiveHint:" in str(refused.value)
    assert "\n" not in str(refused.value)

"""kaos_runtime.loop.blocks: the fenced tool_call / delegate blocks of a model reply."""

from __future__ import annotations

from kaos_runtime.loop.blocks import BadBlock, Delegation, ToolCall, find_action


def test_find_action():
    assert find_action("plain answer") is None
    assert find_action('x\n```tool_call\n{"tool": "echo", "arguments": {"m": "hi\\nthere"}}\n```') == \
        ToolCall("echo", {"m": "hi\nthere"})
    assert find_action('```delegate\n{"agent": "w", "task": "Process task 42"}\n```') == \
        Delegation("w", "Process task 42")
    assert isinstance(find_action("```delegate\n{nope}\n```"), BadBlock)
    assert isinstance(find_action('```delegate\n{"agent": "w"}\n```'), BadBlock)
    assert isinstance(find_action('```tool_call\n{"tool": "t", "arguments": []}\n```'), BadBlock)
    assert find_action("```python\nprint(1)\n```") is None

"""kaos_runtime.streaming.StepGate: a streamed reply reaches the client only once it is known
to be the answer; a step that asks for a tool or a delegation never does."""

from __future__ import annotations

import pytest

from kaos_runtime.blocks import find_action
from kaos_runtime.model import Delta
from kaos_runtime.streaming import StepGate, could_open_block


class Collect:
    def __init__(self) -> None:
        self.pieces: list[str] = []

    async def text(self, content: str) -> None:
        self.pieces.append(content)


async def run(*deltas: Delta) -> tuple[StepGate, list[list[str]]]:
    """Feed the deltas; returns the gate and what the sink had after each delta."""
    sink = Collect()
    gate = StepGate(sink)
    seen = []
    for delta in deltas:
        await gate.feed(delta)
        seen.append(list(sink.pieces))
    return gate, seen


async def test_an_answer_streams_from_its_first_word():
    gate, seen = await run(Delta("Hel"), Delta("lo"), Delta(" world"), Delta(usage={"prompt_tokens": 3}))
    assert seen[0] == ["Hel"] and seen[2] == ["Hel", "lo", " world"]
    assert gate.streamed and gate.reply().content == "Hello world" and gate.reply().usage["prompt_tokens"] == 3


async def test_blanks_and_a_lone_fence_are_held_until_they_decide():
    gate, seen = await run(Delta("\n "), Delta("``"), Delta("`py"), Delta("thon\nprint(1)\n```"))
    assert seen[0] == [] and seen[1] == []
    assert seen[2] == ["\n ```py"] and gate.streamed  # not a tool_call/delegate fence: the answer


@pytest.mark.parametrize("pieces", [
    ["```tool_call\n", '{"tool": "echo", "arguments": {}}\n```'],
    ["``", "`tool", "_ca", "ll", " \n{\"tool\": \"echo\"}\n```"],
    ["  ```delegate\n{\"agent\": \"w\", \"task\": \"t\"}\n```"],
    ["I'll delegate this.\n```delegate\n{\"agent\": \"w\", \"task\": \"t\"}\n```"],  # a scripted reply: one piece
])
async def test_a_fenced_action_is_never_streamed(pieces):
    gate, seen = await run(*(Delta(piece) for piece in pieces))
    assert seen[-1] == [] and not gate.streamed
    assert find_action(gate.reply().content) is not None


async def test_a_native_tool_call_is_never_streamed():
    fragment = {"index": 0, "id": "c1", "function": {"name": "echo", "arguments": "{}"}}
    gate, seen = await run(Delta(""), Delta(tool_calls=(fragment,)), Delta("some words"))
    assert seen[-1] == [] and not gate.streamed
    assert [call.name for call in gate.reply().tool_calls] == ["echo"]


async def test_an_unfinished_block_held_to_the_end_is_the_answer_but_not_streamed():
    gate, seen = await run(Delta("```tool_call\n"), Delta("{oops"))
    assert seen[-1] == [] and not gate.streamed and find_action(gate.reply().content) is None


def test_could_open_block():
    for text in ("`", "``", "```", "``` ", "```tool", "```tool_call", "```tool_call  ", "```deleg", "```delegate\r"):
        assert could_open_block(text), text
    for text in ("a", "`a", "```p", "```tool_calls", "```delegate x"):
        assert not could_open_block(text), text

"""kaos_runtime.loop.step_gate.StepGate: a streamed reply reaches the client only once it is known
to be the answer; a step that asks for a tool or a delegation never does."""

from __future__ import annotations

import pytest

from kaos_runtime.clients.model import Delta
from kaos_runtime.loop.blocks import find_action
from kaos_runtime.loop.step_gate import StepGate, could_open_block


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
    assert gate.state == gate.ANSWER and gate.reply().content == "Hello world"
    assert gate.reply().usage["prompt_tokens"] == 3


async def test_blanks_and_a_lone_fence_are_held_until_they_decide():
    gate, seen = await run(Delta("\n "), Delta("``"), Delta("`py"), Delta("thon\nprint(1)\n```"))
    assert seen[0] == [] and seen[1] == []
    assert seen[2] == ["\n ```py"] and gate.state == gate.ANSWER  # not a tool_call/delegate fence: the answer


@pytest.mark.parametrize("pieces", [
    ["```tool_call\n", '{"tool": "echo", "arguments": {}}\n```'],
    ["``", "`tool", "_ca", "ll", " \n{\"tool\": \"echo\"}\n```"],
    ["  ```delegate\n{\"agent\": \"w\", \"task\": \"t\"}\n```"],
    ["I'll delegate this.\n```delegate\n{\"agent\": \"w\", \"task\": \"t\"}\n```"],  # a scripted reply: one piece
])
async def test_a_fenced_action_is_never_streamed(pieces):
    gate, seen = await run(*(Delta(piece) for piece in pieces))
    assert seen[-1] == [] and gate.state == gate.ACTION
    assert find_action(gate.reply().content) is not None


async def test_a_native_tool_call_is_never_streamed():
    fragment = {"index": 0, "id": "c1", "function": {"name": "echo", "arguments": "{}"}}
    gate, seen = await run(Delta(""), Delta(tool_calls=(fragment,)), Delta("some words"))
    assert seen[-1] == [] and gate.state == gate.ACTION
    assert [call.name for call in gate.reply().tool_calls] == ["echo"]


async def test_an_unfinished_block_held_to_the_end_is_the_answer_sent_on_release():
    gate, seen = await run(Delta("```tool_call\n"), Delta("{oops"))
    assert seen[-1] == [] and find_action(gate.reply().content) is None
    await gate.release()
    assert "".join(gate.sink.pieces) == "```tool_call\n{oops"


@pytest.mark.parametrize("pieces", [
    ["I will check.", "\n```tool_call\n", '{"tool": "echo", "arguments": {}}\n```'],
    ["I will check.\n`", "``", "tool_", "call\n{\"tool\": \"echo\"}\n```"],
    ["Let me ask. ```del", "egate\n{\"agent\": \"w\", \"task\": \"t\"}\n```", " and some more words"],
])
async def test_a_block_after_streamed_text_is_never_streamed(pieces):
    gate, seen = await run(*(Delta(piece) for piece in pieces))
    sent = "".join(seen[-1])
    assert "```" not in sent and "tool" not in sent.lower().replace("I will check", "") and "{" not in sent
    assert gate.state == gate.ACTION and find_action(gate.reply().content) is not None


async def test_a_native_call_after_streamed_text_stops_the_stream():
    fragment = {"index": 0, "id": "c1", "function": {"name": "echo", "arguments": "{}"}}
    gate, seen = await run(Delta("Checking"), Delta(tool_calls=(fragment,)), Delta(" more words"))
    assert seen[-1] == ["Checking"] and gate.state == gate.ACTION
    assert [call.name for call in gate.reply().tool_calls] == ["echo"]


async def test_an_answer_with_code_fences_streams_whole_with_only_fences_held_while_undecided():
    gate, seen = await run(Delta("Run: `ls`, or"), Delta("\n``"), Delta("`sh\nls -l\n``"), Delta("`\nDone."))
    assert seen[0] == ["Run: `ls`, or"]  # a single backtick can open no block: sent at once
    assert "".join(seen[1]) == "Run: `ls`, or\n"  # "``" may still become ```tool_call: held
    assert "".join(seen[-1]) == "Run: `ls`, or\n```sh\nls -l\n```\nDone."
    await gate.release()
    assert "".join(gate.sink.pieces) == gate.reply().content


def test_could_open_block():
    for text in ("`", "``", "```", "``` ", "```tool", "```tool_call", "```tool_call  ", "```deleg", "```delegate\r"):
        assert could_open_block(text), text
    for text in ("a", "`a", "```p", "```tool_calls", "```delegate x"):
        assert not could_open_block(text), text

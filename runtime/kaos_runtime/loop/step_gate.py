"""The step gate: one streamed model reply, held until it is known to be the answer, then streamed.

A reply may turn out to be a tool call or a delegation rather than the answer, so its text is
held until the gate can tell: a tool-call fragment (native), or text that opens a ```tool_call /
```delegate block (fenced), makes it an action, held whole and never sent; text that cannot be
the start of such a block makes it the answer, and from then on every piece is passed on as it
arrives, but for a fence that may still open a block. Leading blanks and a lone opening fence are
held until they decide. (A model that writes text first and asks for a tool later in the same
reply has had that text streamed, never the block or the call itself; the tool still runs and the
rest of the answer follows, as without streaming.)

Pure of HTTP: the gate passes the answer's text to a ``Sink`` (the OpenAI SSE stream,
kaos_runtime.protocols.chat_stream, or an A2A artifact).
"""

from __future__ import annotations

import re
from typing import Protocol

from ..clients.model import Delta, ModelReply, no_usage
from ..clients.tool_calls import CallAssembler

BLOCK_OPENER = re.compile(r"```[ \t]*(?:tool_call|delegate)[ \t]*\r?\n")
BLOCK_KINDS = ("tool_call", "delegate")


class Sink(Protocol):
    async def text(self, content: str) -> None: ...


def could_open_block(text: str) -> bool:
    """Whether ``text`` (leading blanks removed) may still grow into a block opener."""
    if len(text) < 3:
        return text == "`" * len(text)
    if not text.startswith("```"):
        return False
    rest = text[3:].lstrip(" \t")
    for kind in BLOCK_KINDS:
        if kind.startswith(rest):
            return True
        if rest.startswith(kind) and not rest[len(kind):].strip(" \t\r"):
            return True
    return False


class StepGate:
    """One streamed model reply: holds it until it is known to be the answer, then streams it.

    Once the reply is the answer, a fence that may still open a block is held back (the rest is
    passed on as it arrives); should it open one after all, or should the model ask for a tool
    natively after some text, the reply becomes an action there and nothing more is passed on.
    """

    UNDECIDED, ANSWER, ACTION = "undecided", "answer", "action"

    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        self.state = self.UNDECIDED
        self._parts: list[str] = []
        self._held = ""  # the reply's text not passed to the sink (yet)
        self._calls = CallAssembler()
        self._usage: dict[str, int] | None = None

    async def feed(self, delta: Delta) -> None:
        if delta.usage is not None:
            self._usage = delta.usage
        if delta.tool_calls:
            self._calls.add(delta.tool_calls)
            self.state = self.ACTION
        if not delta.content:
            return
        self._parts.append(delta.content)
        self._held += delta.content
        if self.state == self.ANSWER:
            await self._pass_on()
        elif self.state == self.UNDECIDED:
            held = self._held
            if BLOCK_OPENER.search(held):
                self.state = self.ACTION
            elif held.strip() and not could_open_block(held.lstrip()):
                self.state = self.ANSWER
                await self._pass_on()

    async def _pass_on(self) -> None:
        """Send what is held, but for a tail that may still open a block."""
        pending = self._held
        opener = BLOCK_OPENER.search(pending)
        if opener is not None:
            self.state = self.ACTION
            upto = opener.start()
        else:
            upto = next((at for at in _fences(pending) if could_open_block(pending[at:])), len(pending))
        if upto:
            self._held = pending[upto:]
            await self.sink.text(pending[:upto])

    async def release(self) -> None:
        """The reply is the final answer: send whatever of it was held."""
        rest, self._held = self._held, ""
        await self.sink.text(rest)

    def reply(self) -> ModelReply:
        return ModelReply("".join(self._parts), self._usage or no_usage(), self._calls.calls())


def _fences(text: str):
    """Where a run of backticks starts in ``text``."""
    at = text.find("`")
    while at != -1:
        yield at
        at = text.find("`", at + 1)

"""The agentic loop: model calls, tool calls and delegations (native or fenced), memory events.

Each step is one model call. A reply asks for work either natively (``tool_calls``, all of
them run concurrently, results sent back as ``tool`` messages) or with a fenced
``tool_call``/``delegate`` block (the first one is acted on, its result sent back as a user
message); a reply that asks for nothing is the answer. Which protocol the model is offered
(tools as OpenAI ``tools``, or described in the system prompt) is decided per call
(``ModelClient.native_tool_calling``); both are understood in either case, so scripted
replies of both kinds work everywhere. With a sink (a streaming request), model calls are
streamed and the answer's text goes to the sink as it is produced (``step_gate.StepGate``).
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import aclosing
from dataclasses import dataclass

from ..clients.mcp_client import ToolCatalog, ToolError
from ..clients.model import USAGE_FIELDS, ModelClient, ModelError, ModelReply, no_usage
from ..clients.peers import DelegationError, PeerDirectory
from ..core.settings import AgentSettings
from ..core.telemetry import Telemetry
from ..memory import Memory
from .blocks import Action, BadBlock, Delegation, ToolCall, find_action
from .prompts import native_system_prompt, system_prompt
from .step_gate import Sink, StepGate
from .tool_calling import action_of, assistant_message, openai_tools, tool_message

log = logging.getLogger("kaos_runtime.loop")

DELEGATION_ROLE = "task-delegation"


@dataclass(frozen=True)
class LoopRequest:
    """What one run of the agentic loop works on: the validated messages of a chat request
    (roles user/assistant/system/task-delegation), its session and its delegation depth, and
    the bounds its caller set on top of the agent's (fewer steps; a number of tokens)."""

    messages: list[dict]
    session_id: str
    depth: int
    continued: bool
    max_steps: int | None = None
    max_tokens: int | None = None


@dataclass
class Answer:
    """The agent's final text and the tokens all of its model calls for this request cost."""

    content: str
    usage: dict[str, int]
    stopped: str = ""  # the limit that cut the run short: max_steps or max_tokens

    def add(self, reply: ModelReply) -> None:
        for name in USAGE_FIELDS:
            self.usage[name] += reply.usage.get(name, 0)


@dataclass(frozen=True)
class Outcome:
    """What one action produced, as the fenced protocol words it (a user message) and as a
    native ``tool`` message says it."""

    fenced: str
    native: str


def incoming_event(messages: list[dict]) -> tuple[str, str]:
    """The event that records a request: the delegated task, else the last user message."""
    for message in reversed(messages):
        if message["role"] == DELEGATION_ROLE:
            return "task_delegation_received", message["content"]
    for message in reversed(messages):
        if message["role"] == "user":
            return "user_message", message["content"]
    return "user_message", ""


def model_messages(messages: list[dict]) -> list[dict]:
    """Request messages as a model accepts them: a delegated task becomes a user message."""
    return [
        {"role": "user" if message["role"] == DELEGATION_ROLE else message["role"], "content": message["content"]}
        for message in messages
    ]


class Agent:
    def __init__(self, config: AgentSettings, memory: Memory, model: ModelClient,
                 tools: ToolCatalog, peers: PeerDirectory, telemetry: Telemetry | None = None) -> None:
        self.config = config
        self.telemetry = telemetry or Telemetry()
        self.memory = memory
        self.model = model
        self.tools = tools
        self.peers = peers

    async def run(self, request: LoopRequest, sink: Sink | None = None) -> Answer:
        """Answer one request. With ``sink`` (streaming), the answer's text is passed to it as
        it is produced; when the run returns, all of ``Answer.content`` has been passed on."""
        session = request.session_id
        event_type, text = incoming_event(request.messages)
        history = await self.memory.history(session, self.config.memory.context_limit) if request.continued else []
        await self.memory.record(session, event_type, text, {"depth": request.depth})
        try:
            return await self._run(request, history, sink)
        except asyncio.CancelledError:
            # The client went away (or cancelled the request): the work it started stops here.
            await self.memory.record(session, "error",
                                     "the request was cancelled (its client went away or cancelled it)",
                                     {"cancelled": True})
            raise

    async def _run(self, request: LoopRequest, history: list[dict], sink: Sink | None) -> Answer:
        session = request.session_id
        await self.tools.refresh_if_incomplete()
        await self.peers.refresh_if_incomplete()
        skills, peers = self.tools.skills(), self.peers.describe()
        prompts: dict[bool, dict] = {}
        conversation = history + model_messages(request.messages)
        messages = [{}] + conversation  # [0]: the system prompt of the protocol each call uses
        answer = Answer("", no_usage())
        max_steps = min(self.config.max_steps, request.max_steps or self.config.max_steps)
        for step in range(1, max_steps + 1):
            native = bool(skills or peers) and not self.model.scripted_next and await self.model.native_tool_calling()
            if native not in prompts:
                prompt = (native_system_prompt if native else system_prompt)(self.config.instructions, skills, peers)
                prompts[native] = {"role": "system", "content": prompt}
            messages[0] = prompts[native]
            try:
                reply, gate = await self._call_model(messages, step, openai_tools(skills, peers) if native else None,
                                                     sink)
            except ModelError as error:
                await self.memory.record(session, "error", f"model call failed: {error}", {"step": step})
                answer.content = f"The model call failed: {error}"
                await self.memory.record(session, "agent_response", answer.content, {"step": step, "failed": True})
                return await self._finish(answer, sink)
            answer.add(reply)
            over = request.max_tokens and answer.usage.get("total_tokens", 0) >= request.max_tokens
            if over and (reply.tool_calls or find_action(reply.content) is not None):  # more work: not started
                answer.content = (f"Stopped: the model calls used {answer.usage['total_tokens']} tokens, the "
                                  f"request's limit is {request.max_tokens} (X-KAOS-Max-Tokens).")
                answer.stopped = "max_tokens"
                await self.memory.record(session, "agent_response", answer.content, {"step": step, "token_limit": True})
                return await self._finish(answer, sink)
            if reply.tool_calls:
                actions = [action_of(call, delegation=bool(peers)) for call in reply.tool_calls]
                outcomes = await asyncio.gather(*(self._act(action, request, conversation) for action in actions))
                messages.append(assistant_message(reply.content, reply.tool_calls))
                messages.extend(tool_message(call, outcome.native) for call, outcome in zip(reply.tool_calls, outcomes))
                continue
            if not reply.content.strip():  # no text and no tool call: never a silent empty answer
                await self.memory.record(session, "error", "the model returned no text and no tool call", {"step": step})
                answer.content = "The model returned an empty answer (no text and no tool call)."
                await self.memory.record(session, "agent_response", answer.content, {"step": step, "empty": True})
                return await self._finish(answer, sink)
            action = find_action(reply.content)
            if action is None:
                await self.memory.record(session, "agent_response", reply.content, {"step": step})
                answer.content = reply.content
                if gate is None:
                    return await self._finish(answer, sink)
                await gate.release()
                return answer
            messages.append({"role": "assistant", "content": reply.content})
            messages.append({"role": "user", "content": (await self._act(action, request, conversation)).fenced})
        source = "AGENTIC_LOOP_MAX_STEPS" if max_steps == self.config.max_steps else "X-KAOS-Max-Steps"
        answer.content = (f"Stopped: reached the step limit of {max_steps} model calls "
                          f"({source}) without a final answer.")
        answer.stopped = "max_steps"
        await self.memory.record(session, "agent_response", answer.content, {"step_limit": True})
        return await self._finish(answer, sink)

    @staticmethod
    async def _finish(answer: Answer, sink: Sink | None) -> Answer:
        """An answer no model call streamed (scripted, held, a failure, the step limit)."""
        if sink is not None:
            await sink.text(answer.content)
        return answer

    async def _call_model(self, messages: list[dict], step: int, tools: list[dict] | None,
                          sink: Sink | None) -> tuple[ModelReply, StepGate | None]:
        """The reply, and with a sink the gate that streamed what it could of it."""
        attributes = {"gen_ai.request.model": self.config.model_name, "kaos.step": step}
        with self.telemetry.span("model.call", attributes, client=True) as span:
            try:
                if sink is None:
                    return await self.model.complete(messages, tools), None
                gate = StepGate(sink)
                async with aclosing(self.model.stream(messages, tools)) as deltas:
                    async for delta in deltas:
                        await gate.feed(delta)
                return gate.reply(), gate
            except ModelError as error:
                self.telemetry.failed(span, str(error))
                raise

    async def _act(self, action: Action, request: LoopRequest, conversation: list[dict]) -> Outcome:
        """Run what a block or a native call asks for."""
        session = request.session_id
        if isinstance(action, ToolCall):
            return await self._call_tool(action, session)
        if isinstance(action, Delegation):
            return await self._delegate(action, request, conversation)
        assert isinstance(action, BadBlock)
        await self.memory.record(session, "error", action.problem, {"block": action.kind})
        return Outcome(f"Your {action.kind} block could not be used: {action.problem}",
                       f"This call could not be used: {action.problem}")

    async def _call_tool(self, call: ToolCall, session: str) -> Outcome:
        await self.memory.record(session, "tool_call", {"tool": call.tool, "arguments": call.arguments})
        with self.telemetry.span("tool.call", {"kaos.tool": call.tool}, client=True) as span:
            try:
                result = await self.tools.call(call.tool, call.arguments)
            except ToolError as error:
                self.telemetry.failed(span, str(error))
                await self.memory.record(session, "error", {"tool": call.tool, "error": str(error)})
                failed = f"Tool {call.tool} failed: {error}"
                return Outcome(failed, failed)
        await self.memory.record(session, "tool_result", {"tool": call.tool, "result": result})
        return Outcome(f"Result of tool {call.tool}:\n{result}", result)

    async def _delegate(self, delegation: Delegation, request: LoopRequest, conversation: list[dict]) -> Outcome:
        session, agent = request.session_id, delegation.agent
        peer = self.peers.get(agent)
        refusal = None
        if peer is None:
            allowed = ", ".join(self.peers.peers) or "none"
            refusal = f"{agent!r} is not an agent this agent may delegate to (allowed: {allowed})"
        elif request.depth + 1 > self.config.max_delegation_depth:
            refusal = (f"delegation depth limit reached ({self.config.max_delegation_depth}, "
                       "MAX_DELEGATION_DEPTH); answer without delegating")
        if refusal is not None:
            await self.memory.record(session, "delegation_error", {"agent": agent, "task": delegation.task, "error": refusal})
            refused = f"Delegation to {agent} refused: {refusal}"
            return Outcome(refused, refused)
        await self.memory.record(session, "delegation_request", {"agent": agent, "task": delegation.task})
        limit = self.config.memory.context_limit
        context = [m for m in conversation if m["role"] in ("user", "assistant")][-limit:] if limit else []
        messages = context + [{"role": DELEGATION_ROLE, "content": delegation.task}]
        with self.telemetry.span("delegate", {"kaos.peer": agent, "kaos.depth": request.depth + 1},
                                 client=True) as span:
            try:
                response = await self.peers.delegate(peer, messages, request.depth + 1, self.config.name,
                                                     self.telemetry.inject({}))
            except DelegationError as error:
                self.telemetry.failed(span, str(error))
                await self.memory.record(session, "delegation_error",
                                   {"agent": agent, "task": delegation.task, "error": str(error)})
                failed = f"Delegation to {agent} failed: {error}"
                return Outcome(failed, failed)
        await self.memory.record(session, "delegation_response", {"agent": agent, "response": response})
        return Outcome(f"Response from agent {agent}:\n{response}", response)

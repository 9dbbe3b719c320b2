"""The agentic loop: model calls, fenced tool_call/delegate blocks, memory events."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from .blocks import BadBlock, Delegation, ToolCall, find_action
from .mcp_client import ToolCatalog, ToolError
from .memory import Memory
from .model import USAGE_FIELDS, ModelClient, ModelError, ModelReply, no_usage
from .peers import DelegationError, PeerDirectory
from .prompts import system_prompt
from .settings import AgentSettings
from .telemetry import Telemetry

log = logging.getLogger("kaos_runtime.loop")

DELEGATION_ROLE = "task-delegation"


@dataclass(frozen=True)
class LoopRequest:
    """What one run of the agentic loop works on: the validated messages of a chat request
    (roles user/assistant/system/task-delegation), its session and its delegation depth."""

    messages: list[dict]
    session_id: str
    depth: int
    continued: bool


@dataclass
class Answer:
    """The agent's final text and the tokens all of its model calls for this request cost."""

    content: str
    usage: dict[str, int]

    def add(self, reply: ModelReply) -> None:
        for name in USAGE_FIELDS:
            self.usage[name] += reply.usage.get(name, 0)


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

    async def run(self, request: LoopRequest) -> Answer:
        session = request.session_id
        event_type, text = incoming_event(request.messages)
        history = await self.memory.history(session, self.config.memory.context_limit) if request.continued else []
        await self.memory.record(session, event_type, text, {"depth": request.depth})
        await self.tools.refresh_if_incomplete()
        await self.peers.refresh_if_incomplete()
        prompt = system_prompt(self.config.instructions, self.tools.skills(), self.peers.describe())
        conversation = history + model_messages(request.messages)
        messages = [{"role": "system", "content": prompt}] + conversation
        answer = Answer("", no_usage())
        for step in range(1, self.config.max_steps + 1):
            try:
                reply = await self._call_model(messages, step)
            except ModelError as error:
                await self.memory.record(session, "error", f"model call failed: {error}", {"step": step})
                answer.content = f"The model call failed: {error}"
                await self.memory.record(session, "agent_response", answer.content, {"step": step, "failed": True})
                return answer
            answer.add(reply)
            action = find_action(reply.content)
            if action is None:
                await self.memory.record(session, "agent_response", reply.content, {"step": step})
                answer.content = reply.content
                return answer
            messages.append({"role": "assistant", "content": reply.content})
            messages.append({"role": "user", "content": await self._act(action, request, conversation)})
        answer.content = (f"Stopped: reached the step limit of {self.config.max_steps} model calls "
                          "(AGENTIC_LOOP_MAX_STEPS) without a final answer.")
        await self.memory.record(session, "agent_response", answer.content, {"step_limit": True})
        return answer

    async def _call_model(self, messages: list[dict], step: int) -> ModelReply:
        attributes = {"gen_ai.request.model": self.config.model_name, "kaos.step": step}
        with self.telemetry.span("model.call", attributes, client=True) as span:
            try:
                return await self.model.complete(messages)
            except ModelError as error:
                self.telemetry.failed(span, str(error))
                raise

    async def _act(self, action, request: LoopRequest, conversation: list[dict]) -> str:
        """Run what a block asks for; the text returned goes back to the model."""
        session = request.session_id
        if isinstance(action, ToolCall):
            return await self._call_tool(action, session)
        if isinstance(action, Delegation):
            return await self._delegate(action, request, conversation)
        assert isinstance(action, BadBlock)
        await self.memory.record(session, "error", action.problem, {"block": action.kind})
        return f"Your {action.kind} block could not be used: {action.problem}"

    async def _call_tool(self, call: ToolCall, session: str) -> str:
        await self.memory.record(session, "tool_call", {"tool": call.tool, "arguments": call.arguments})
        with self.telemetry.span("tool.call", {"kaos.tool": call.tool}, client=True) as span:
            try:
                result = await self.tools.call(call.tool, call.arguments)
            except ToolError as error:
                self.telemetry.failed(span, str(error))
                await self.memory.record(session, "error", {"tool": call.tool, "error": str(error)})
                return f"Tool {call.tool} failed: {error}"
        await self.memory.record(session, "tool_result", {"tool": call.tool, "result": result})
        return f"Result of tool {call.tool}:\n{result}"

    async def _delegate(self, delegation: Delegation, request: LoopRequest, conversation: list[dict]) -> str:
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
            return f"Delegation to {agent} refused: {refusal}"
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
                return f"Delegation to {agent} failed: {error}"
        await self.memory.record(session, "delegation_response", {"agent": agent, "response": response})
        return f"Response from agent {agent}:\n{response}"

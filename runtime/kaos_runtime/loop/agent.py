"""The agentic loop: model calls, tool calls and delegations (native or fenced), memory events.

Each step is one model call. A reply asks for work either natively (``tool_calls``, all of
them run concurrently, results sent back as ``tool`` messages) or with a fenced
``tool_call``/``delegate`` block (the first one is acted on, its result sent back as a user
message); a reply that asks for nothing is the answer. Which protocol the model is offered
(tools as OpenAI ``tools``, or described in the system prompt) is decided per call
(``ModelClient.native_tool_calling``); both are understood in either case, so scripted
replies of both kinds work everywhere. With a sink (a streaming request), model calls are
streamed and the answer's text goes to the sink as it is produced (``step_gate.StepGate``).

A call the approval policy gates (``TOOL_APPROVAL_*``) first asks the ``ApprovalGate`` whether
it may run and waits for the decision; a refused call's result, given to the model, says why.
The actions of one step wait and run concurrently, each for its own decision. With a durable
approval store (Redis) a step that waits is journaled (``RunState.snapshot``): when the process stops
meanwhile, another process resumes the run (``Agent.resume``) once the call is decided.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import aclosing
from dataclasses import asdict, dataclass, field

from ..approvals import ALLOWED, ApprovalGate, ApprovalInterrupted, ApprovalWatcher, Verdict, Where, new_run_id
from ..clients.http import HttpClient
from ..clients.mcp_client import ToolCatalog, ToolError
from ..clients.mcp_identity import calling_for
from ..clients.model import USAGE_FIELDS, ModelClient, ModelError, ModelReply, no_usage
from ..clients.peers import DelegationError, PeerDirectory
from ..clients.tool_calls import calls_of
from ..context import Context
from ..core.settings import AgentSettings
from ..core.telemetry import Telemetry
from ..memory import Memory
from .blocks import Action, BadBlock, Delegation, ToolCall, find_action
from .prompts import native_system_prompt, system_prompt
from .step_gate import Sink, StepGate
from .tool_calling import DELEGATE_TOOL, action_of, assistant_message, openai_tools, tool_message

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
    # The principal the run acts for (core/principal.py, its text): an approval's requester, and
    # whom a delegation acts for at the peer.
    caller: str = "anonymous"
    caller_groups: frozenset[str] = frozenset()  # its groups, which a delegation's assertion carries


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


@dataclass
class RunState:
    """One run of the loop as it goes: what resuming it in another process needs."""

    request: LoopRequest
    conversation: list[dict]  # the history and the request's messages: a delegation's context
    messages: list[dict]  # [system prompt] + conversation + what the steps added
    answer: Answer
    run_id: str = field(default_factory=new_run_id)
    first_step: int = 1
    resumed_reply: ModelReply | None = None  # the step a resumed run waited in
    resumed_outcomes: dict[int, Outcome] = field(default_factory=dict)
    watcher: ApprovalWatcher | None = None

    def snapshot(self, step: int, reply: ModelReply) -> dict:
        """What the journal keeps of a step that waits (JSON)."""
        request = {**asdict(self.request), "caller_groups": sorted(self.request.caller_groups)}
        return {"request": request, "conversation": self.conversation, "messages": self.messages[1:], "step": step,
                "usage": self.answer.usage,
                "reply": {"content": reply.content, "tool_calls": [call.message() for call in reply.tool_calls]}}

    @classmethod
    def restored(cls, run_id: str, snapshot: dict, outcomes: dict[int, dict]) -> "RunState":
        request = LoopRequest(**{**snapshot["request"],
                                 "caller_groups": frozenset(snapshot["request"].get("caller_groups") or ())})
        reply = snapshot["reply"]
        return cls(request=request, conversation=snapshot["conversation"], messages=[{}] + snapshot["messages"],
                   answer=Answer("", {**no_usage(), **snapshot["usage"]}), run_id=run_id,
                   first_step=snapshot["step"],
                   resumed_reply=ModelReply(reply["content"], tool_calls=calls_of(reply["tool_calls"])),
                   resumed_outcomes={index: Outcome(**outcome) for index, outcome in outcomes.items()})


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
                 tools: ToolCatalog, peers: PeerDirectory, telemetry: Telemetry | None = None,
                 approvals: ApprovalGate | None = None, http: HttpClient | None = None) -> None:
        self.config = config
        self.telemetry = telemetry or Telemetry()
        self.memory = memory
        self.model = model
        self.tools = tools
        self.peers = peers
        self.approvals = approvals if approvals is not None and approvals.policy.enabled else None
        self.context = Context(config, memory, http)

    async def run(self, request: LoopRequest, sink: Sink | None = None,
                  watcher: ApprovalWatcher | None = None) -> Answer:
        """Answer one request. With ``sink`` (streaming), the answer's text is passed to it as
        it is produced; when the run returns, all of ``Answer.content`` has been passed on.
        ``watcher`` hears of the approvals the run waits for."""
        session = request.session_id
        event_type, text = incoming_event(request.messages)
        history = await self.context.history(session) if request.continued else []
        await self.memory.record(session, event_type, text, {"depth": request.depth})
        conversation = history + model_messages(request.messages)
        state = RunState(request, conversation, [{}] + conversation, Answer("", no_usage()), watcher=watcher)
        return await self._guarded(state, sink)

    async def resume(self, run_id: str) -> Answer | None:
        """Go on with a journaled run whose process stopped while it waited for an approval
        (its answer goes to memory, as every answer does); None if the journal has no such run."""
        journal = self.approvals.store.journal if self.approvals is not None else None
        snapshot, outcomes = await journal.load_run(run_id) if journal is not None else (None, {})
        if snapshot is None:
            if journal is not None:
                await journal.drop_run(run_id)
            return None
        state = RunState.restored(run_id, snapshot, outcomes)
        log.info("resuming run %s of session %s at step %d", run_id, state.request.session_id, state.first_step)
        return await self._guarded(state, None)

    async def _guarded(self, state: RunState, sink: Sink | None) -> Answer:
        session = state.request.session_id
        try:
            return await self._run(state, sink)
        except asyncio.CancelledError:
            # The client went away (or cancelled the request): the work it started stops here.
            await self.memory.record(session, "error",
                                     "the request was cancelled (its client went away or cancelled it)",
                                     {"cancelled": True})
            raise
        except ApprovalInterrupted as error:
            await self.memory.record(session, "error", str(error), {"approval": True})
            raise

    async def _run(self, state: RunState, sink: Sink | None) -> Answer:
        request = state.request
        session = request.session_id
        await self.tools.refresh_if_incomplete()
        await self.peers.refresh_if_incomplete()
        skills, peers = self.tools.skills(), self.peers.describe()
        prompts: dict[bool, dict] = {}
        messages, answer = state.messages, state.answer
        max_steps = min(self.config.max_steps, request.max_steps or self.config.max_steps)
        if state.resumed_reply is not None:  # first the step the run waited in
            await self._act_on(state, state.first_step, state.resumed_reply, bool(peers))
            state.first_step += 1
        for step in range(state.first_step, max_steps + 1):
            native = bool(skills or peers) and not self.model.scripted_next and await self.model.native_tool_calling()
            if native not in prompts:
                prompt = (native_system_prompt if native else system_prompt)(self.config.instructions, skills, peers)
                prompts[native] = {"role": "system", "content": prompt}
            messages[0] = prompts[native]
            tools = openai_tools(skills, peers) if native else None
            fitted = await self.context.fit(messages, 1 + len(state.conversation), tools)
            try:
                reply, gate = await self._call_model(fitted.messages, step, tools, sink)
            except ModelError as error:
                await self.memory.record(session, "error", f"model call failed: {error}", {"step": step})
                return await self._end(answer, sink, session, f"The model call failed: {error}",
                                       {"step": step, "failed": True})
            answer.add(reply)
            over = request.max_tokens and answer.usage.get("total_tokens", 0) >= request.max_tokens
            wants_work = bool(reply.tool_calls) or find_action(reply.content) is not None
            if over and wants_work:  # more work: not started
                answer.stopped = "max_tokens"
                return await self._end(answer, sink, session,
                                       f"Stopped: the model calls used {answer.usage['total_tokens']} tokens, the "
                                       f"request's limit is {request.max_tokens} (X-KAOS-Max-Tokens).",
                                       {"step": step, "token_limit": True})
            if not wants_work and not reply.content.strip():  # never a silent empty answer
                await self.memory.record(session, "error", "the model returned no text and no tool call", {"step": step})
                return await self._end(answer, sink, session,
                                       "The model returned an empty answer (no text and no tool call).",
                                       {"step": step, "empty": True})
            if not wants_work:
                await self.memory.record(session, "agent_response", reply.content, {"step": step})
                answer.content = reply.content
                if gate is None:
                    return await self._finish(answer, sink)
                await gate.release()
                return answer
            await self._act_on(state, step, reply, bool(peers))
        source = "AGENTIC_LOOP_MAX_STEPS" if max_steps == self.config.max_steps else "X-KAOS-Max-Steps"
        answer.stopped = "max_steps"
        return await self._end(answer, sink, session, f"Stopped: reached the step limit of {max_steps} model calls "
                                                      f"({source}) without a final answer.", {"step_limit": True})

    async def _end(self, answer: Answer, sink: Sink | None, session: str, content: str, metadata: dict) -> Answer:
        """The run ends with ``content`` (a failure, a limit, an empty reply), recorded as its response."""
        answer.content = content
        await self.memory.record(session, "agent_response", content, metadata)
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

    async def _act_on(self, state: RunState, step: int, reply: ModelReply, delegation: bool) -> None:
        """Do what the reply asks for (its native calls, else its first fenced block) and add the
        reply and the results to the run's messages."""
        if reply.tool_calls:
            actions = [action_of(call, delegation=delegation) for call in reply.tool_calls]
        else:
            actions = [find_action(reply.content)]
        outcomes = await self._act_all(state, step, reply, actions)
        if reply.tool_calls:
            state.messages.append(assistant_message(reply.content, reply.tool_calls))
            state.messages.extend(tool_message(call, outcome.native)
                                  for call, outcome in zip(reply.tool_calls, outcomes))
        else:
            state.messages.append({"role": "assistant", "content": reply.content})
            state.messages.append({"role": "user", "content": outcomes[0].fenced})

    async def _act_all(self, state: RunState, step: int, reply: ModelReply, actions: list[Action]) -> list[Outcome]:
        """The actions of one step, concurrently; journaled when one of them waits for a
        decision and the approval store outlives this process."""
        journal = self.approvals.store.journal if self.approvals is not None else None
        journaled = journal is not None and journal.durable and any(map(self._gated, actions))
        done = state.resumed_outcomes if state.resumed_reply is not None and step == state.first_step else {}
        if journaled and state.resumed_reply is None:
            await journal.save_run(state.run_id, state.snapshot(step, reply))

        async def act(index: int, action: Action) -> Outcome:
            if index in done:
                return done[index]
            where = Where(state.run_id, step, index, state.request.session_id, state.request.caller,
                          resumed=state.resumed_reply is not None and step == state.first_step,
                          watcher=state.watcher)
            with calling_for(state.request.caller, state.request.caller_groups):  # whom MCP servers are told
                outcome = await self._act(action, state, where)
            if journaled:
                await journal.save_outcome(state.run_id, index, asdict(outcome))
            return outcome

        try:
            outcomes = await asyncio.gather(*(act(index, action) for index, action in enumerate(actions)))
        except asyncio.CancelledError:
            if journaled and not self.approvals.stopping:  # the request went away: nothing resumes it
                await journal.drop_run(state.run_id)
            raise
        if journaled:
            await journal.drop_run(state.run_id)
        state.resumed_reply = None
        return list(outcomes)

    def _gated(self, action: Action) -> bool:
        if isinstance(action, ToolCall):
            return self.approvals.gates_tool(action.tool)
        return isinstance(action, Delegation) and self.approvals.gates_peer(action.agent)

    async def _admit(self, action: Action, tool: str, arguments: dict, where: Where) -> Verdict:
        """May the action run? At once when the policy does not gate it; else once a person says so."""
        if self.approvals is None or not self._gated(action):
            return ALLOWED
        return await self.approvals.admit(tool, arguments, where)

    async def _act(self, action: Action, state: RunState, where: Where) -> Outcome:
        """Run what a block or a native call asks for."""
        session = state.request.session_id
        if isinstance(action, ToolCall):
            return await self._call_tool(action, session, where)
        if isinstance(action, Delegation):
            return await self._delegate(action, state.request, state.conversation, where)
        assert isinstance(action, BadBlock)
        await self.memory.record(session, "error", action.problem, {"block": action.kind})
        return Outcome(f"Your {action.kind} block could not be used: {action.problem}",
                       f"This call could not be used: {action.problem}")

    async def _call_tool(self, call: ToolCall, session: str, where: Where) -> Outcome:
        verdict = await self._admit(call, call.tool, call.arguments, where)
        if not verdict.run:
            refused = f"Tool {call.tool} was not run: {verdict.reason}"
            return Outcome(refused, refused)
        await self.memory.record(session, "tool_call", {"tool": call.tool, "arguments": call.arguments})
        with self.telemetry.span("tool.call", {"kaos.tool": call.tool}, client=True) as span:
            try:
                result = await self.tools.call(call.tool, call.arguments)
            except ToolError as error:
                self.telemetry.failed(span, str(error))
                await self.memory.record(session, "error", {"tool": call.tool, "error": str(error)})
                log.info("session %s: tool %s failed: %s", session, call.tool, error)
                failed = f"Tool {call.tool} failed: {error}"
                return Outcome(failed, failed)
        log.info("session %s: tool %s called", session, call.tool)
        await self.memory.record(session, "tool_result", {"tool": call.tool, "result": result})
        return Outcome(f"Result of tool {call.tool}:\n{result}", result)

    async def _delegate(self, delegation: Delegation, request: LoopRequest, conversation: list[dict],
                        where: Where) -> Outcome:
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
        verdict = await self._admit(delegation, DELEGATE_TOOL, {"agent": agent, "task": delegation.task}, where)
        if not verdict.run:
            refused = f"Delegation to {agent} was not made: {verdict.reason}"
            return Outcome(refused, refused)
        await self.memory.record(session, "delegation_request", {"agent": agent, "task": delegation.task})
        limit = self.config.memory.context_limit
        context = [m for m in conversation if m["role"] in ("user", "assistant")][-limit:] if limit else []
        messages = context + [{"role": DELEGATION_ROLE, "content": delegation.task}]
        with self.telemetry.span("delegate", {"kaos.peer": agent, "kaos.depth": request.depth + 1},
                                 client=True) as span:
            try:
                response = await self.peers.delegate(peer, messages, request.depth + 1, self.config.name,
                                                     self.telemetry.inject({}), on_behalf_of=request.caller,
                                                     groups=request.caller_groups)
            except DelegationError as error:
                self.telemetry.failed(span, str(error))
                await self.memory.record(session, "delegation_error",
                                   {"agent": agent, "task": delegation.task, "error": str(error)})
                log.info("session %s: delegation to %s failed: %s", session, agent, error)
                failed = f"Delegation to {agent} failed: {error}"
                return Outcome(failed, failed)
        log.info("session %s: delegated to %s, which answered", session, agent)
        await self.memory.record(session, "delegation_response", {"agent": agent, "response": response})
        return Outcome(f"Response from agent {agent}:\n{response}", response)

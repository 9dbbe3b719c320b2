"""TriggerEngine: the Triggers of one control plane (the operator, or `kaos up`).

The control plane hands it every Trigger (``apply``/``delete``; ``apply`` takes a spec only
when its generation is new to the engine, so a control plane may hand it the same Trigger on
every event) and serves its webhook and manual runs through it, each Trigger named by its
``Ref``. The engine keeps each Trigger's schedule (a supervised task that sleeps until the next
due time: a failure is written to the status, Failed with reason ScheduleFailed and no next run,
and the schedule restarts after a backoff), its runs and its status. It reaches the world
through a ``TriggerHost``: the target Agent (its status, its endpoint), the webhook's Secret,
and ``persist``, which writes a Trigger's status through the control plane's one status writer
and says whether it was written.

Before a scheduled run's message is sent, its due time (``status.lastRun``) and the run (in
``status.active``) are persisted: a control plane that restarts neither fires it again nor
loses it silently (see ``kaos.triggers.tick``).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Awaitable, Callable, Mapping, Protocol

import httpx

from kaos.api import AGENT, SecretKey
from kaos.backoff import exponential
from kaos.reconcile import Ref, ref_of
from kaos.trigger_runner.executor import Result, execute
from kaos.triggers.message import render
from kaos.triggers.runs import FAILED, MANUAL, SCHEDULE, WEBHOOK, Run, RunBook, parse_time
from kaos.triggers.spec import TriggerSpec, TriggerSpecError, trigger_spec
from kaos.triggers.status import agent_problem, trigger_status
from kaos.triggers.tick import schedule_tick
from kaos.triggers.webhook import NOT_SIGNED, Answer, WebhookCall, answer, malformed, refusal

log = logging.getLogger("kaos.trigger_runner")

# How soon a schedule whose status could not be written tries again.
PERSIST_RETRY_SECONDS = 2.0
# How soon a schedule that failed restarts: 5 s after its first failure in a row, doubling up to 5 min.
RESTART_BASE_SECONDS, RESTART_CAP_SECONDS = 5.0, 300.0


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class TriggerHost(Protocol):
    def agent(self, ref: Ref) -> Mapping[str, Any] | None:
        """The Agent with its status (``status.endpoint``), or None."""

    async def secret(self, namespace: str, name: str, key: str) -> bytes | None:
        """A Secret's key (None when the Secret or the key is missing)."""

    async def persist(self, ref: Ref, status: dict) -> bool:
        """Write the Trigger's status now; whether it was written."""


@dataclass
class TriggerState:
    ref: Ref
    resource: dict
    spec: TriggerSpec | None
    problem: str | None
    book: RunBook
    last_run: datetime | None = None
    next_run: datetime | None = None
    run_now: str | None = None  # the run-now request that last started a run (status.runNow)
    schedule: asyncio.Task | None = None
    schedule_problem: str | None = None  # why the schedule stopped, until it restarts
    runs: dict[str, asyncio.Task] = field(default_factory=dict)
    stop_reasons: dict[str, str] = field(default_factory=dict)

    @property
    def created(self) -> datetime:
        return parse_time((self.resource.get("metadata") or {}).get("creationTimestamp")) or utcnow()

    @property
    def generation(self) -> Any:
        return self.resource["metadata"].get("generation")

    @property
    def agent(self) -> Ref:
        return Ref(AGENT, self.ref.namespace, (self.resource.get("spec") or {}).get("agent", ""))


class TriggerEngine:
    def __init__(self, host: TriggerHost, client: httpx.AsyncClient | None = None,
                 clock: Callable[[], datetime] = utcnow, sleep: Callable[[float], Awaitable] = asyncio.sleep,
                 on_run: Callable[[Ref, Run], None] | None = None) -> None:
        self.host = host
        self.client = client or httpx.AsyncClient()
        self.clock = clock
        self.sleep = sleep
        self.on_run = on_run  # called as a run's message is sent (benchmarks, tests)
        self.triggers: dict[Ref, TriggerState] = {}

    # The control plane's side

    def apply(self, resource: dict) -> bool:
        """A Trigger (validated, defaults applied) as the control plane sees it now: a generation
        the engine has not taken yet (re)starts its schedule; whether it did."""
        ref = ref_of(resource)
        state = self.triggers.get(ref)
        if state is not None and state.generation == resource["metadata"].get("generation"):
            return False
        try:
            spec, problem = trigger_spec(resource), None
        except TriggerSpecError as error:
            spec, problem = None, str(error)
        history_limit = spec.history_limit if spec else int(resource["spec"].get("historyLimit") or 10)
        if state is None:
            status = resource.get("status") or {}
            book = RunBook.from_status(ref.name, status, history_limit, self.clock())
            state = self.triggers[ref] = TriggerState(ref, resource, spec, problem, book,
                                                      last_run=parse_time(status.get("lastRun")),
                                                      run_now=status.get("runNow"))
        else:
            state.resource, state.spec, state.problem = resource, spec, problem
            state.book.resize(history_limit)
            if spec is None or spec.schedule is None:
                state.last_run = state.next_run = None
        if state.schedule is not None:
            state.schedule.cancel()
            state.schedule = None
        state.schedule_problem = None
        if spec is not None and spec.schedule is not None:
            try:  # the status shows the next run at once; a failure here fails the schedule's first tick too
                state.next_run = spec.schedule.next_after(self.clock())
            except Exception:
                state.next_run = None
            state.schedule = asyncio.get_running_loop().create_task(self._supervise(state), name=f"schedule {ref}")
        return True

    def delete(self, ref: Ref) -> None:
        """A Trigger was deleted: its schedule stops and its runs are cancelled."""
        state = self.triggers.pop(ref, None)
        if state is None:
            return
        if state.schedule is not None:
            state.schedule.cancel()
        for task in state.runs.values():
            task.cancel()

    def status(self, ref: Ref) -> dict | None:
        """The status to write for a Trigger (None if the engine does not hold it)."""
        state = self.triggers.get(ref)
        if state is None:
            return None
        return trigger_status(state.resource, problem=state.problem, agent=self.host.agent(state.agent),
                              book=state.book, last_run=state.last_run, next_run=state.next_run,
                              run_now=state.run_now, schedule_problem=state.schedule_problem)

    async def fire(self, ref: Ref, body: bytes | None = None) -> Answer:
        """A manual run (``kaos trigger run``, the run-now annotation), now."""
        state = self.triggers.get(ref)
        if state is None:
            return Answer(404, {"detail": f"no trigger {ref.namespace}/{ref.name}"})
        if state.spec is None:
            return Answer(409, {"detail": f"trigger {ref.name} is Failed: {state.problem}"})
        return await self._start(state, MANUAL, body)

    async def run_now(self, ref: Ref, request: str | None) -> Answer | None:
        """A run-now request (the annotation's value): one not handled yet starts a manual run,
        and is written in status.runNow with the run, so that a restart does not start it
        again; None when there is nothing to do."""
        state = self.triggers.get(ref)
        if state is None or not request or request == state.run_now:
            return None
        previous, state.run_now = state.run_now, request
        if state.spec is None:
            return Answer(409, {"detail": f"trigger {ref.name} is Failed: {state.problem}"})
        answer = await self._start(state, MANUAL, None)
        if answer.status == 503:  # not recorded: the same request is tried again
            state.run_now = previous
        return answer

    async def webhook(self, ref: Ref, call: WebhookCall) -> Answer:
        """A webhook call: refused (400, 401, 409, 413, 429, ...) or a run started in the background (202)."""
        refused = malformed(call, self.clock())
        if refused is not None:
            return refused
        state = self.triggers.get(ref)
        spec = (state.resource.get("spec") or {}) if state is not None else {}
        key_ref = (spec.get("webhook") or {}).get("secretRef")
        if key_ref is None:  # no such Trigger, or no webhook: the same answer as a wrong signature
            return NOT_SIGNED
        try:
            secret = await self.host.secret(ref.namespace, key_ref["name"], key_ref["key"])
        except Exception as error:  # the API cannot be read now (forbidden, unreachable): a 503, not a 500
            log.warning("cannot read the webhook Secret of trigger %s/%s: %s", ref.namespace, ref.name, error)
            return Answer(503, {"detail": f"trigger {ref.name} cannot verify signatures now; try again"})
        if secret is None:
            log.warning("trigger %s/%s: the webhook's Secret %s or its key %s does not exist: every call is refused",
                        ref.namespace, ref.name, key_ref["name"], key_ref["key"])
        waiting = None if state.spec is None else agent_problem(state.spec.agent, self.host.agent(state.agent))
        refused = refusal(call, secret, name=ref.name, suspended=bool(spec.get("suspend")), problem=state.problem,
                          agent_problem=waiting)
        if refused is not None:
            return refused
        return await self._start(state, WEBHOOK, call.body, delivery_id=call.delivery, signed_at=call.signed_at)

    async def close(self) -> None:
        tasks = [task for state in self.triggers.values() for task in (state.schedule, *state.runs.values()) if task]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self.triggers.clear()
        await self.client.aclose()

    # Runs

    async def _start(self, state: TriggerState, source: str, body: bytes | None, *,
                     scheduled: datetime | None = None, delivery_id: str | None = None,
                     signed_at: datetime | None = None) -> Answer:
        spec = state.spec
        start = state.book.start(source, self.clock(), spec.concurrency, spec.session, scheduled=scheduled,
                                 delivery_id=delivery_id, signed_at=signed_at,
                                 max_concurrent=spec.limits.max_concurrent_runs)
        if start.run is not None or start.skipped is not None:
            if not await self._persist(state):
                if start.run is not None:
                    state.book.abandon(start.run.run_id)
                return Answer(503, {"detail": "the run could not be recorded in the Trigger's status; try again"})
        if start.run is not None:
            for replaced in start.replace:
                self._stop(state, replaced, f"replaced by run {start.run.run_id} (concurrencyPolicy Replace)")
            self._launch(state, start.run, render(spec.message, body))
        return answer(start)

    def _launch(self, state: TriggerState, run: Run, message: str) -> None:
        task = asyncio.get_running_loop().create_task(self._run(state, run, message))
        state.runs[run.run_id] = task

    def _stop(self, state: TriggerState, run_id: str, reason: str) -> None:
        task = state.runs.get(run_id)
        if task is not None:
            state.stop_reasons[run_id] = reason
            task.cancel()

    async def _run(self, state: TriggerState, run: Run, message: str) -> None:
        try:
            result = await self._send(state, run, message)
        except asyncio.CancelledError:
            reason = state.stop_reasons.pop(run.run_id, None)
            if reason is None:  # the Trigger was deleted or the engine closed
                raise
            result = Result(FAILED, self.clock(), reason)
        state.runs.pop(run.run_id, None)
        if run.run_id in state.book.active:
            state.book.finish(run.run_id, result.outcome, result.end, result.text, result.tokens)
            log.info("trigger %s/%s run %s: %s", state.ref.namespace, state.ref.name, run.run_id, result.outcome)
            await self._persist(state)

    async def _send(self, state: TriggerState, run: Run, message: str) -> Result:
        """The run's message to the agent, and how the run ended."""
        spec, ref = state.spec, state.ref
        agent = self.host.agent(state.agent)
        endpoint = ((agent or {}).get("status") or {}).get("endpoint")
        problem = agent_problem(spec.agent, agent) or (None if endpoint else f"Agent {spec.agent} has no endpoint")
        credential = None
        if problem is None and spec.credentials is not None:
            credential, problem = await self._credential(ref.namespace, spec.credentials)
        if problem is not None:
            return Result(FAILED, self.clock(), problem)
        if self.on_run is not None:
            self.on_run(ref, run)
        return await execute(self.client, endpoint, spec.name, run, message, spec.limits,
                             credential=credential, clock=self.clock)

    async def _credential(self, namespace: str, ref: SecretKey) -> tuple[str | None, str | None]:
        """The bearer token of spec.credentials, or why it cannot be sent (never the token itself)."""
        where = f"spec.credentials.secretKeyRef (Secret {ref.name}, key {ref.key})"
        try:
            value = await self.host.secret(namespace, ref.name, ref.key)
        except Exception as error:  # the host's failure must end the run, not leave it active
            return None, f"cannot read {where} now: {error}"
        token = (value or b"").decode("utf-8", "replace").strip()
        if not token:
            return None, f"{where}: the Secret or the key does not exist, or it is empty"
        if not (token.isascii() and token.isprintable()) or any(c in token for c in " ,"):
            return None, f"{where}: the value is not one bearer token (one key, no spaces, commas or line breaks)"
        return token, None

    # Schedules

    async def _supervise(self, state: TriggerState) -> None:
        """Runs the schedule; a failure is written to the status and the schedule restarts after
        a backoff (it never stops in silence while the status shows a next run)."""
        failures = 0
        while True:
            try:
                await self._schedule(state)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                failures += 1
                delay = exponential(failures, RESTART_BASE_SECONDS, RESTART_CAP_SECONDS)
                log.exception("the schedule of trigger %s/%s failed; it restarts in %g s",
                              state.ref.namespace, state.ref.name, delay)
                state.next_run = None
                state.schedule_problem = (f"the schedule failed ({type(error).__name__}: {error}); "
                                          f"it restarts in {delay:g} s")
                await self._persist(state)
                await self.sleep(delay)

    async def _schedule(self, state: TriggerState) -> None:
        while True:
            spec = state.spec
            now = self.clock()
            tick = schedule_tick(spec, state.last_run, state.created, now)
            previous, recovered = state.last_run, state.schedule_problem is not None
            state.last_run, state.next_run, state.schedule_problem = tick.last_run, tick.next_run, None
            if tick.skipped:
                state.book.skip(SCHEDULE, now, tick.skipped, scheduled=tick.skipped_at)
            if tick.run is not None:
                started = await self._start(state, SCHEDULE, None, scheduled=tick.run)
                if started.status == 503:  # not recorded, so not sent: the same due time is tried again
                    state.last_run = tick.skipped_at or previous
                    await self.sleep(PERSIST_RETRY_SECONDS)
                    continue
            elif tick.last_run != previous or tick.skipped or recovered:
                await self._persist(state)
            await self.sleep(max(0.0, (tick.next_run - self.clock()).total_seconds()))

    async def _persist(self, state: TriggerState) -> bool:
        status = self.status(state.ref)
        if status is None:
            return False
        try:
            return await self.host.persist(state.ref, status)
        except Exception as error:  # the host's failure must not end a schedule
            log.warning("cannot write the status of trigger %s/%s: %s", state.ref.namespace, state.ref.name, error)
            return False

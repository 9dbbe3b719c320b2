"""``Runtime``: everything one agent process holds (memory, model client, tools, peers, budget,
metrics, the agentic loop) and its readiness, wired once when the app is created."""

from __future__ import annotations

import asyncio
import logging

from ..approvals import ApprovalGate, ApprovalInterrupted, ApprovalPolicy, create_store
from ..budget import BudgetedModel, create_budget
from ..clients.http import HttpClient
from ..clients.mcp_client import ToolCatalog
from ..clients.model import ModelClient
from ..clients.peers import PeerDirectory
from ..core.audit import AuditTrail
from ..core.auth import CredentialedPeers
from ..core.grants import rules as access_rules
from ..core.metrics import MeteredMemory, MeteredModel, MeteredPeers, MeteredTools, Metrics
from ..core.principal import Access
from ..core.settings import AgentSettings
from ..core.telemetry import Telemetry
from ..long_term import MemoryTools, RememberingAgent, create_long_term
from ..loop.agent import Agent
from ..memory import create_memory
from ..memory.ownership import Sessions

log = logging.getLogger("kaos_runtime.agent")

STARTUP_DISCOVERY_SECONDS = 10.0
# How often a process with approvals in Redis looks for waiting runs that no live process holds.
RESUME_INTERVAL_SECONDS = 5.0


class Runtime:
    """Everything one agent process holds: memory, model client, tools, peers, readiness."""

    def __init__(self, config: AgentSettings, telemetry: Telemetry | None = None) -> None:
        self.config = config
        self.telemetry = telemetry or Telemetry()
        self.http = HttpClient()
        self.memory = create_memory(config.memory, config.name)
        self.model = ModelClient(config)
        self.tools = ToolCatalog(config.mcp_servers, config.tool_timeout)
        self.peers = PeerDirectory(config.peers, self.http, config.peer_timeout, config.a2a_peers)
        # METRICS_ENABLED=false: no Metrics, no wrapper, no middleware, no /metrics.
        self.metrics = Metrics() if config.metrics_enabled else None
        if self.metrics is not None:
            self.memory = MeteredMemory(self.memory, self.metrics)
            self.model = MeteredModel(self.model, self.metrics, config.model_name)
            self.tools = MeteredTools(self.tools, self.metrics)
            self.peers = MeteredPeers(self.peers, self.metrics)
        # LONG_TERM_MEMORY_*: memories across sessions, the remember/recall tools (None when off).
        self.long_term = create_long_term(config)
        if self.long_term is not None:
            self.tools = MemoryTools(self.tools, self.long_term, self.memory)
        self.budget = create_budget(config.budget, config.name, config.memory,
                                    self.metrics.budget_rejected if self.metrics is not None else None, self.memory)
        self.model = BudgetedModel(self.model, self.budget)  # checked before each model call
        self.peers = CredentialedPeers(self.peers, config.auth.outbound_token.get_secret_value())
        # Who owns, reads and decides what (core/principal.py); off without authentication.
        self.access = Access(config.auth.enabled, config.auth.admins, config.approval.approvers,
                             access_rules(config.auth.access_rules))
        self.audit = AuditTrail(config.name)  # decisions, refusals, admin reads (core/audit.py)
        self.sessions = Sessions(self.memory, self.access)
        policy = ApprovalPolicy.from_settings(config.approval)
        self.approvals = ApprovalGate(policy, create_store(config), self.memory, config.name, self.tools.info,
                                      self.metrics.approval if self.metrics is not None else None,
                                      access=self.access, audit=self.audit)
        self.agent = Agent(config, self.memory, self.model, self.tools, self.peers, self.telemetry, self.approvals,
                           http=self.http)
        if self.long_term is not None:
            self.agent = RememberingAgent(self.agent, self.long_term, self.memory)
        self.ready = False
        self.waiting_for = ["startup"]
        self._startup: asyncio.Task | None = None
        self._resumer: asyncio.Task | None = None
        self._resumed: set[asyncio.Task] = set()
        self._sweeper: asyncio.Task | None = None

    def start(self) -> None:
        self._startup = asyncio.create_task(self._prepare())
        if self.long_term is not None:
            self._sweeper = asyncio.create_task(self.long_term.keep_sweeping())
        if self.approvals.store.journal.durable and self.approvals.policy.enabled:
            self._resumer = asyncio.create_task(self._resume_orphaned_runs())

    def stopping(self) -> None:
        """The process was told to stop (SIGTERM): calls waiting for a decision give up now, so
        that their callers hear why rather than a closed connection."""
        self.approvals.interrupt()

    async def _resume_orphaned_runs(self) -> None:
        """Runs that waited for an approval in a process that is gone: go on with them here."""
        failing = False
        while not self.approvals.stopping:
            try:
                for run_id in await self.approvals.store.journal.claim_orphaned_runs():
                    task = asyncio.create_task(self._resume(run_id))
                    self._resumed.add(task)
                    task.add_done_callback(self._resumed.discard)
                failing = False
            except Exception as error:
                if not failing:  # once per outage, not every few seconds
                    log.warning("looking for runs waiting for an approval failed: %s", error)
                failing = True
            await asyncio.sleep(RESUME_INTERVAL_SECONDS)

    async def _resume(self, run_id: str) -> None:
        try:
            await self.agent.resume(run_id)
        except ApprovalInterrupted:
            pass  # stopping again: the next process resumes it
        except Exception:
            log.exception("resuming run %s failed", run_id)

    async def _prepare(self) -> None:
        """Attempt discovery once (bounded), build the model client if asked; then report ready."""
        self.waiting_for = ["tool and peer discovery"]
        await asyncio.gather(self.tools.discover(STARTUP_DISCOVERY_SECONDS),
                             self.peers.fetch_cards(STARTUP_DISCOVERY_SECONDS))
        if not (self.tools.complete and self.peers.complete):
            log.warning("startup discovery incomplete; it is retried lazily")
        if self.config.preload:
            self.waiting_for = ["model client"]
            try:
                await self.model.load()
            except Exception as error:
                log.error("%s", error)
        self.waiting_for = []
        self.ready = True
        log.info("agent %s ready", self.config.name)

    async def stop(self) -> None:
        self.approvals.interrupt()
        for task in (self._startup, self._resumer, self._sweeper, *self._resumed):
            if task is not None:
                task.cancel()
        await asyncio.gather(*self._resumed, return_exceptions=True)
        await self.approvals.store.journal.release_runs()
        await self.approvals.store.close()
        await self.tools.close()
        await self.peers.close()
        await self.model.close()
        await self.agent.context.close()
        await self.http.close()
        if self.long_term is not None:
            await self.long_term.close()
        await self.memory.close()
        await self.budget.close()
        self.telemetry.shutdown()

"""``Runtime``: everything one agent process holds (memory, model client, tools, peers, budget,
metrics, the agentic loop) and its readiness, wired once when the app is created."""

from __future__ import annotations

import asyncio
import logging

from ..clients.http import HttpClient
from ..clients.mcp_client import ToolCatalog
from ..clients.model import ModelClient
from ..clients.peers import PeerDirectory
from ..core.auth import CredentialedPeers
from ..core.budget import BudgetedModel, create_budget
from ..core.metrics import MeteredMemory, MeteredModel, MeteredPeers, MeteredTools, Metrics
from ..core.settings import AgentSettings
from ..core.telemetry import Telemetry
from ..loop.agent import Agent
from ..memory import create_memory

log = logging.getLogger("kaos_runtime.agent")

STARTUP_DISCOVERY_SECONDS = 10.0


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
        self.budget = create_budget(config.budget, config.name, config.memory,
                                    self.metrics.budget_rejected if self.metrics is not None else None, self.memory)
        self.model = BudgetedModel(self.model, self.budget)  # checked before each model call
        self.peers = CredentialedPeers(self.peers, config.auth.outbound_token.get_secret_value())
        self.agent = Agent(config, self.memory, self.model, self.tools, self.peers, self.telemetry)
        self.ready = False
        self.waiting_for = ["startup"]
        self._startup: asyncio.Task | None = None

    def start(self) -> None:
        self._startup = asyncio.create_task(self._prepare())

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
        if self._startup is not None:
            self._startup.cancel()
        await self.tools.close()
        await self.peers.close()
        await self.model.close()
        await self.http.close()
        await self.memory.close()
        await self.budget.close()
        self.telemetry.shutdown()

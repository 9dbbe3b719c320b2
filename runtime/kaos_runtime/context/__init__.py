"""What the model sees: a session's history and the current run, within the model's context window.

- ``window.py``: the window (MODEL_CONTEXT_WINDOW, litellm's model map, a default) and the room
  kept for the answer;
- ``tokens.py``: counting tokens (tiktoken for OpenAI's models, the model server's own tokenizer
  where it counts them (llama.cpp: clients/server_tokens.py), an estimate otherwise);
- ``fit.py``: the budget builder (pure): the system prompt and the current turn always, history
  from the newest, whole turns, oversized results cut with a marker;
- ``history.py``: a session's history from its events, and what a compaction replaces (pure);
- ``compaction.py``: summaries of older turns, recorded as ``context_compacted`` events.

``Context`` puts them together for the agentic loop (docs/memory.md, "Context and compaction").
"""

from __future__ import annotations

import asyncio
import json

from ..clients.http import HttpClient
from ..clients.model import ModelClient
from ..clients.server_tokens import ServerTokenizer
from ..core.settings import AgentSettings
from ..memory import Memory
from .compaction import Compactor
from .fit import Fitted, fit, texts_of
from .history import history_of
from .tokens import ServerTokens, Tokens, tokens_for
from .window import Window, load_limits, window_for

__all__ = ["Context", "Fitted", "Window", "fit"]


class Context:
    def __init__(self, config: AgentSettings, memory: Memory, http: HttpClient | None = None) -> None:
        self.config = config
        self.memory = memory
        self._http = http  # the runtime's; one of its own, closed with it, when not given
        self._own_http: HttpClient | None = None
        self._tokens: Tokens | None = None
        self._window: Window | None = None
        self._loading: asyncio.Lock | None = None
        self._server: ServerTokenizer | None = None  # the model server's tokenizer (llama.cpp)
        self.compactor = None
        if config.context.compaction:
            # Its own client (built on its first call): the summaries are not the run's model calls
            # (no budget, no stream); none under DEBUG_MOCK_RESPONSES (the extractive summary).
            summarizer = None if config.mock_responses is not None else ModelClient(config.model_copy(
                update={"model_name": config.context.compaction_model or config.model_name}))
            self.compactor = Compactor(memory, summarizer, config.context.compaction_threshold_percent)

    async def load(self) -> tuple[Tokens, Window]:
        """The counter and the window, found once, off the event loop (tiktoken, the model map)."""
        if self._tokens is None or self._window is None:
            self._loading = self._loading or asyncio.Lock()
            async with self._loading:
                if self._tokens is None or self._window is None:
                    window, tokens = await asyncio.to_thread(self._find)
                    self._tokens, self._window = await self._server_tokens(tokens), window
        return self._tokens, self._window

    async def _server_tokens(self, tokens: Tokens) -> Tokens:
        """The model server's own tokenizer instead of the estimate, when it has one (llama.cpp)."""
        if tokens.name != "estimate" or self.config.context.tokenizer != "auto" or not self.config.model_api_url:
            return tokens
        if self._http is None:
            self._http = self._own_http = HttpClient()
        server = ServerTokenizer(self.config.model_api_url, self.config.api_key.get_secret_value(),
                                 self.config.model_name, self._http)
        if not await server.available():
            return tokens
        self._server = server
        return ServerTokens()

    async def _learn(self, tokens: ServerTokens, texts: list[str]) -> None:
        missing = tokens.missing(texts)
        if missing and self._server is not None:
            for text, count in zip(missing, await self._server.count(missing)):
                if count is not None:
                    tokens.learn(text, count)

    async def close(self) -> None:
        if self._own_http is not None:
            await self._own_http.close()
        if self.compactor is not None and self.compactor.summarizer is not None:
            await self.compactor.summarizer.close()

    def _find(self) -> tuple[Window, Tokens]:
        configured = self.config.context.window
        window = window_for(self.config.model_name, configured, {} if configured else load_limits())
        return window, tokens_for(self.config.model_name, self.config.context.tokenizer)

    async def history(self, session_id: str) -> list[dict]:
        """The session's history as messages: its latest summary (a system message) and the turns
        no summary replaces; compacted first when it has grown past the threshold."""
        history = history_of(await self.memory.context_events(session_id))
        if self.compactor is not None and history.turns:
            tokens, window = await self.load()
            history = await self.compactor.compacted(session_id, history, window.input, tokens)
        return history.messages()

    async def fit(self, messages: list[dict], steps_from: int, tools: list[dict] | None) -> Fitted:
        """``messages`` ([system prompt] + history + the request + the steps, from ``steps_from``)
        within the input budget, less what the tools offered cost."""
        tokens, window = await self.load()
        offered_text = json.dumps(tools, separators=(",", ":")) if tools else ""
        if isinstance(tokens, ServerTokens):
            await self._learn(tokens, [offered_text, *texts_of(messages)])
        offered = tokens.count(offered_text) if tools else 0
        return fit(messages, steps_from, window.input - offered, tokens)

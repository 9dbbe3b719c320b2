"""What the agentic loop calls for a model answer: scripted replies first, then a model client with retries.

Two model clients (MODEL_CLIENT):
- ``direct`` (default, ``openai_chat.OpenAIChat``): the OpenAI chat completions API of
  MODEL_API_URL over one pooled aiohttp session, in plain JSON; litellm is not imported.
- ``acompletion`` (``litellm_chat.AcompletionLitellm``): every call through
  ``litellm.acompletion`` (callbacks, cost tracking), litellm imported when the client is built.

The client is built once, in a worker thread (the event loop keeps serving): on the first real
model call, or at startup with MODEL_PRELOAD (``/ready`` waits for it). Both offer ``complete``
(one answer) and ``stream`` (``Delta``s of text and tool-call fragments, the usage last).
Whether tools are offered natively (MODEL_TOOL_CALLING=auto) is read from litellm's model map
as data (``function_calling``).
"""

from __future__ import annotations

import asyncio
import gc
import logging
from collections import deque
from contextlib import aclosing
from typing import AsyncIterator

from ..core.errors import describe
from ..core.settings import AgentSettings
from .chat_wire import (
    USAGE_FIELDS,
    Delta,
    ModelError,
    ModelReply,
    TransientModelError,
    no_usage,
    openai_base_url,
    scripted_delta,
)
from .function_calling import load_function_calling_names, supports_function_calling
from .tool_calls import scripted_reply

__all__ = ["USAGE_FIELDS", "Delta", "ModelClient", "ModelError", "ModelReply", "TransientModelError", "no_usage",
           "openai_base_url"]

log = logging.getLogger("kaos_runtime.model")


def build_backend(config: AgentSettings, api_key: str):
    """The model client MODEL_CLIENT names (runs in a worker thread: it may import litellm)."""
    if config.model_client == "acompletion":
        from .litellm_chat import AcompletionLitellm

        return AcompletionLitellm(config, api_key)
    from .openai_chat import OpenAIChat

    return OpenAIChat(config, api_key)


class ModelClient:
    """What the agentic loop calls: mock responses first, then the model client with retries."""

    def __init__(self, config: AgentSettings) -> None:
        self.config = config
        self._mocks = deque(config.mock_responses or ())
        self._backend = None
        self._loading: asyncio.Task | None = None
        self._api_key = config.api_key.get_secret_value()
        self._function_calling: bool | None = None
        self._offers_tools = bool(config.mcp_servers or config.peers or config.a2a_peers)

    @property
    def loaded(self) -> bool:
        return self._backend is not None

    @property
    def scripted_next(self) -> bool:
        """The next call is answered by DEBUG_MOCK_RESPONSES (no model is asked)."""
        return bool(self._mocks)

    def _guess_function_calling(self) -> bool:
        names = load_function_calling_names()
        return supports_function_calling(self.config.model_name, names)

    async def native_tool_calling(self) -> bool:
        """Whether to offer tools natively: MODEL_TOOL_CALLING, or (auto) whether litellm's
        model map says the model supports function calling (read once, off the event loop)."""
        mode = self.config.tool_calling
        if mode != "auto":
            return mode == "native"
        if not self.config.model_api_url or not self.config.model_name:
            return False
        if self._function_calling is None:
            self._function_calling = await asyncio.to_thread(self._guess_function_calling)
        return self._function_calling

    async def load(self):
        """Build the model client once, off the event loop (with MODEL_TOOL_CALLING=auto and
        tools or peers to offer, also read whether the model calls functions, so that the
        first request after Ready does not)."""
        if self._backend is not None:
            return self._backend
        if self._loading is None:
            self._loading = asyncio.create_task(self._build())
        return await asyncio.shield(self._loading)

    async def _build(self):
        try:
            backend = await asyncio.to_thread(build_backend, self.config, self._api_key)
        except Exception as error:
            self._loading = None
            raise ModelError(f"cannot set up the model client: {describe(error)}") from error
        if self._offers_tools:
            await self.native_tool_calling()
        if self.config.preload:
            await backend.warm()
        self._backend = backend
        # What is loaded by now lives as long as the process (with acompletion, litellm's
        # million objects): out of the collector's reach, full collections stay short.
        gc.collect()
        gc.freeze()
        log.info("model client ready (%s, model %s)", self.config.model_client, self.config.model_name)
        return self._backend

    async def _backend_for_call(self):
        if not self.config.model_api_url or not self.config.model_name:
            raise ModelError("no model configured (MODEL_API_URL and MODEL_NAME must be set)")
        return await self.load()

    async def _retry_delay(self, error: TransientModelError, attempt: int, attempts: int) -> None:
        if attempt + 1 >= attempts:
            raise ModelError(f"{error} (after {attempts} attempts)") from error
        delay = self.config.model_retry_backoff * (2 ** attempt)
        log.warning("model call failed (%s); retrying in %.2fs", error, delay)
        await asyncio.sleep(delay)

    async def complete(self, messages: list[dict], tools: list[dict] | None = None) -> ModelReply:
        if self._mocks:
            content, calls = scripted_reply(self._mocks.popleft())
            return ModelReply(content, tool_calls=calls)
        backend = await self._backend_for_call()
        attempts = 1 + self.config.model_max_retries
        for attempt in range(attempts):
            try:
                return await backend.complete(messages, tools)
            except TransientModelError as error:
                await self._retry_delay(error, attempt, attempts)
        raise ModelError("unreachable")

    async def stream(self, messages: list[dict], tools: list[dict] | None = None) -> AsyncIterator[Delta]:
        """The answer as it is produced. A transient failure is retried only before the first
        piece arrived (what was passed on cannot be taken back)."""
        if self._mocks:
            content, calls = scripted_reply(self._mocks.popleft())
            yield Delta(content, scripted_delta(calls))
            return
        backend = await self._backend_for_call()
        attempts = 1 + self.config.model_max_retries
        for attempt in range(attempts):
            started = False
            try:
                async with aclosing(backend.stream(messages, tools)) as deltas:
                    async for delta in deltas:
                        started = True
                        yield delta
                return
            except TransientModelError as error:
                if started:
                    raise ModelError(str(error)) from error
                await self._retry_delay(error, attempt, attempts)

    async def close(self) -> None:
        if self._backend is not None:
            await self._backend.close()

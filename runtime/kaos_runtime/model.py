"""Model calls through litellm, with DEBUG_MOCK_RESPONSES, retries and a lazy import.

Two litellm paths (MODEL_CLIENT):
- ``direct`` (default): litellm resolves the provider (``get_llm_provider`` with the
  ``openai`` custom provider, so MODEL_NAME is sent unchanged), builds the URL, headers and
  body with its provider config (``transform_request``) and parses the answer into its
  ``ModelResponse`` type; the request itself goes over one
  pooled aiohttp session (the library litellm's own transport is built on). This skips the
  per-call logging object, callbacks and cost calculation that make ``litellm.acompletion``
  cost milliseconds per call (see docs/runtime.md, "Performance").
- ``acompletion``: plain ``litellm.acompletion`` (callbacks, cost tracking, every feature).

litellm takes seconds and ~120 MiB to import, so it is imported on the first real model call
(in a worker thread, the event loop keeps serving), or at startup with MODEL_PRELOAD=true.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import os
import threading
from collections import deque
from dataclasses import dataclass, field

from .errors import describe
from .settings import AgentSettings

log = logging.getLogger("kaos_runtime.model")

TRANSIENT_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


USAGE_FIELDS = ("prompt_tokens", "completion_tokens", "total_tokens")


def no_usage() -> dict[str, int]:
    return dict.fromkeys(USAGE_FIELDS, 0)


@dataclass(frozen=True)
class ModelReply:
    """The text of one model answer and the tokens it cost (zeros when the model did not say)."""

    content: str
    usage: dict[str, int] = field(default_factory=no_usage)


def usage_of(response) -> dict[str, int]:
    usage = getattr(response, "usage", None)
    return {name: int(getattr(usage, name, 0) or 0) for name in USAGE_FIELDS}


class ModelError(Exception):
    """The model could not answer (after retries)."""


class TransientModelError(ModelError):
    """Worth retrying: connection refused, timeout, 429, 5xx."""


def openai_base_url(model_api_url: str) -> str:
    """MODEL_API_URL is the ModelAPI's base URL; OpenAI-compatible routes live under /v1."""
    url = model_api_url.rstrip("/")
    return url if url.endswith("/v1") else url + "/v1"


_import_lock = threading.Lock()


def import_litellm():
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    with _import_lock:
        import litellm

        litellm.suppress_debug_info = True
        return litellm


class DirectLitellm:
    """litellm's provider config and response model, one pooled aiohttp session for HTTP."""

    def __init__(self, config: AgentSettings, api_key: str) -> None:
        litellm = import_litellm()
        import aiohttp
        from litellm import ProviderConfigManager
        from litellm.types.utils import LlmProviders, ModelResponse

        self._aiohttp = aiohttp
        self._response_type = ModelResponse
        api_base = openai_base_url(config.model_api_url)
        self.model, provider, _, _ = litellm.get_llm_provider(
            model=config.model_name, custom_llm_provider="openai", api_base=api_base
        )
        self._provider_config = ProviderConfigManager.get_provider_chat_config(
            model=self.model, provider=LlmProviders(provider)
        )
        self._litellm_params = {"custom_llm_provider": provider, "api_base": api_base}
        self.url = self._provider_config.get_complete_url(
            api_base=api_base, api_key=api_key, model=self.model, optional_params={},
            litellm_params=self._litellm_params,
        )
        self._api_key = api_key
        self._timeout = aiohttp.ClientTimeout(total=config.model_timeout or None)
        self._session = None

    def _session_for_loop(self):
        if self._session is None or self._session.closed:
            self._session = self._aiohttp.ClientSession(timeout=self._timeout)
        return self._session

    async def complete(self, messages: list[dict]) -> ModelReply:
        config = self._provider_config
        headers = config.validate_environment(
            headers={}, model=self.model, messages=messages, optional_params={},
            litellm_params=self._litellm_params, api_key=self._api_key,
        )
        body = config.transform_request(
            model=self.model, messages=messages, optional_params={},
            litellm_params=self._litellm_params, headers=headers,
        )
        try:
            async with self._session_for_loop().post(self.url, data=json.dumps(body), headers=headers) as response:
                raw = await response.read()
                status = response.status
        except (self._aiohttp.ClientError, asyncio.TimeoutError) as error:
            raise TransientModelError(f"cannot reach the model at {self.url}: {describe(error)}") from error
        if status >= 400:
            message = f"the model API answered HTTP {status}: {raw[:300].decode(errors='replace')}"
            raise (TransientModelError if status in TRANSIENT_STATUS else ModelError)(message)
        try:
            parsed = self._response_type(**json.loads(raw))
        except Exception as error:
            raise ModelError(f"the model API sent an answer that is not a chat completion: {describe(error)}") from error
        return ModelReply(parsed.choices[0].message.content or "", usage_of(parsed))

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()


class AcompletionLitellm:
    """Every model call through ``litellm.acompletion``."""

    def __init__(self, config: AgentSettings, api_key: str) -> None:
        self._litellm = import_litellm()
        self.model = config.model_name
        self._api_base = openai_base_url(config.model_api_url)
        self._api_key = api_key
        self._timeout = config.model_timeout or None
        litellm = self._litellm
        self._transient = (
            litellm.APIConnectionError, litellm.Timeout, litellm.RateLimitError,
            litellm.ServiceUnavailableError, litellm.InternalServerError,
        )

    async def complete(self, messages: list[dict]) -> ModelReply:
        try:
            response = await self._litellm.acompletion(
                model=self.model, messages=messages, api_base=self._api_base, api_key=self._api_key,
                custom_llm_provider="openai", timeout=self._timeout, num_retries=0,
            )
        except self._transient as error:
            raise TransientModelError(describe(error)) from error
        except Exception as error:
            raise ModelError(describe(error)) from error
        return ModelReply(response.choices[0].message.content or "", usage_of(response))

    async def close(self) -> None:
        return None


class ModelClient:
    """What the agentic loop calls: mock responses first, then litellm with retries."""

    def __init__(self, config: AgentSettings) -> None:
        self.config = config
        self._mocks = deque(config.mock_responses or ())
        self._backend = None
        self._loading: asyncio.Task | None = None
        self._api_key = config.api_key.get_secret_value()

    @property
    def loaded(self) -> bool:
        return self._backend is not None

    async def load(self):
        """Import litellm and build the backend once, off the event loop."""
        if self._backend is not None:
            return self._backend
        if self._loading is None:
            self._loading = asyncio.create_task(self._build())
        return await asyncio.shield(self._loading)

    async def _build(self):
        backend_type = DirectLitellm if self.config.model_client == "direct" else AcompletionLitellm
        try:
            self._backend = await asyncio.to_thread(backend_type, self.config, self._api_key)
        except Exception as error:
            self._loading = None
            raise ModelError(f"cannot set up the model client: {describe(error)}") from error
        # litellm adds about a million long-lived objects; moving them out of the collector's
        # reach keeps full collections (and the latency spikes they cause) short.
        gc.collect()
        gc.freeze()
        log.info("model client ready (%s, model %s)", self.config.model_client, self.config.model_name)
        return self._backend

    async def complete(self, messages: list[dict]) -> ModelReply:
        if self._mocks:
            return ModelReply(self._mocks.popleft())
        if not self.config.model_api_url or not self.config.model_name:
            raise ModelError("no model configured (MODEL_API_URL and MODEL_NAME must be set)")
        backend = await self.load()
        attempts = 1 + self.config.model_max_retries
        for attempt in range(attempts):
            try:
                return await backend.complete(messages)
            except TransientModelError as error:
                if attempt + 1 >= attempts:
                    raise ModelError(f"{error} (after {attempts} attempts)") from error
                delay = self.config.model_retry_backoff * (2 ** attempt)
                log.warning("model call failed (%s); retrying in %.2fs", error, delay)
                await asyncio.sleep(delay)
        raise ModelError("unreachable")

    async def close(self) -> None:
        if self._backend is not None:
            await self._backend.close()

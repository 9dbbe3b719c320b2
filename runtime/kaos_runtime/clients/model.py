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

Both paths offer ``complete`` (one answer) and ``stream`` (the answer as the model produces
it: ``Delta``s of text and tool-call fragments, the usage last, asked for with
``stream_options.include_usage``). Native tool calls go out as OpenAI ``tools`` and come back
as ``tool_calls`` (kaos_runtime.clients.tool_calls); whether the model supports them is litellm's
``supports_function_calling`` unless MODEL_TOOL_CALLING forces it.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import os
import threading
from collections import deque
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import AsyncIterator

from ..core.errors import describe
from ..core.settings import AgentSettings
from .tool_calls import NativeCall, calls_of, scripted_reply

log = logging.getLogger("kaos_runtime.model")

TRANSIENT_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


USAGE_FIELDS = ("prompt_tokens", "completion_tokens", "total_tokens")


def no_usage() -> dict[str, int]:
    return dict.fromkeys(USAGE_FIELDS, 0)


@dataclass(frozen=True)
class ModelReply:
    """The text of one model answer, the native tool calls it asks for, and the tokens it cost
    (zeros when the model did not say)."""

    content: str
    usage: dict[str, int] = field(default_factory=no_usage)
    tool_calls: tuple[NativeCall, ...] = ()


@dataclass(frozen=True)
class Delta:
    """A piece of a streamed answer: text, tool-call fragments (OpenAI's streamed form, keyed
    by ``index``), and the usage once the model reports it."""

    content: str = ""
    tool_calls: tuple = ()
    usage: dict[str, int] | None = None


def usage_of(response) -> dict[str, int]:
    usage = getattr(response, "usage", None)
    return {name: int(getattr(usage, name, 0) or 0) for name in USAGE_FIELDS}


def usage_dict(usage: dict) -> dict[str, int]:
    return {name: int(usage.get(name) or 0) for name in USAGE_FIELDS}


def delta_of(chunk: dict) -> Delta:
    """A ``chat.completion.chunk`` (as JSON) -> Delta; an ``error`` object -> ModelError."""
    if "error" in chunk and not chunk.get("choices"):
        error = chunk["error"]
        raise ModelError(f"the model API failed mid-stream: {error.get('message') if isinstance(error, dict) else error}")
    content, calls = "", ()
    choices = chunk.get("choices") or ()
    if choices:
        delta = choices[0].get("delta") or {}
        content = delta.get("content") or ""
        calls = tuple(delta.get("tool_calls") or ())
    usage = chunk.get("usage")
    return Delta(content, calls, usage_dict(usage) if isinstance(usage, dict) else None)


def scripted_delta(calls: tuple[NativeCall, ...]) -> tuple:
    """Whole native calls as the fragments of a stream."""
    return tuple({"index": index, "id": call.id, "type": "function",
                  "function": {"name": call.name, "arguments": call.arguments}} for index, call in enumerate(calls))


def supports_function_calling(litellm, model_name: str) -> bool:
    """litellm's model map says whether the model takes OpenAI ``tools`` (False when unknown)."""
    try:
        return bool(litellm.supports_function_calling(model=model_name))
    except Exception:  # an unknown model or provider: litellm raises rather than answers
        return False


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
    """Import litellm (once, thread-safe). The runtime is the one owner of its
    LITELLM_LOCAL_MODEL_COST_MAP: set here, before the import, so that the import reads the
    bundled cost map instead of fetching it (no chart, image or caller sets it for the runtime;
    a value already set wins)."""
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
        self.function_calling = supports_function_calling(litellm, config.model_name)
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

    def _request(self, messages: list[dict], optional_params: dict) -> tuple[dict, dict]:
        """Headers and body of a call, built by litellm's provider config."""
        config = self._provider_config
        headers = config.validate_environment(
            headers={}, model=self.model, messages=messages, optional_params=optional_params,
            litellm_params=self._litellm_params, api_key=self._api_key,
        )
        body = config.transform_request(
            model=self.model, messages=messages, optional_params=optional_params,
            litellm_params=self._litellm_params, headers=headers,
        )
        return headers, body

    async def complete(self, messages: list[dict], tools: list[dict] | None = None) -> ModelReply:
        headers, body = self._request(messages, {"tools": tools} if tools else {})
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
        message = parsed.choices[0].message
        return ModelReply(message.content or "", usage_of(parsed), calls_of(getattr(message, "tool_calls", None)))

    async def stream(self, messages: list[dict], tools: list[dict] | None = None) -> AsyncIterator[Delta]:
        """The answer as server-sent chunks arrive; closing the generator drops the connection,
        so the model server sees its client go away."""
        optional = {"stream": True, "stream_options": {"include_usage": True}}
        if tools:
            optional["tools"] = tools
        headers, body = self._request(messages, optional)
        try:
            response = await self._session_for_loop().post(self.url, data=json.dumps(body), headers=headers)
        except (self._aiohttp.ClientError, asyncio.TimeoutError) as error:
            raise TransientModelError(f"cannot reach the model at {self.url}: {describe(error)}") from error
        finished = False
        try:
            if response.status >= 400:
                raw = await response.read()
                message = f"the model API answered HTTP {response.status}: {raw[:300].decode(errors='replace')}"
                raise (TransientModelError if response.status in TRANSIENT_STATUS else ModelError)(message)
            try:
                async for line in response.content:
                    if not line.startswith(b"data:"):
                        continue
                    data = line[5:].strip()
                    if data == b"[DONE]":
                        break
                    try:
                        chunk = json.loads(data)
                    except ValueError as error:
                        raise ModelError(f"the model API sent a chunk that is not JSON: {describe(error)}") from error
                    yield delta_of(chunk)
            except (self._aiohttp.ClientError, asyncio.TimeoutError) as error:
                raise TransientModelError(f"the model stream from {self.url} broke: {describe(error)}") from error
            finished = True
        finally:
            if finished:
                response.release()
            else:
                response.close()

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
        self.function_calling = supports_function_calling(litellm, config.model_name)
        self._transient = (
            litellm.APIConnectionError, litellm.Timeout, litellm.RateLimitError,
            litellm.ServiceUnavailableError, litellm.InternalServerError,
        )

    async def _call(self, messages: list[dict], **extra):
        if not extra.get("tools"):
            extra.pop("tools", None)
        try:
            return await self._litellm.acompletion(
                model=self.model, messages=messages, api_base=self._api_base, api_key=self._api_key,
                custom_llm_provider="openai", timeout=self._timeout, num_retries=0, **extra,
            )
        except self._transient as error:
            raise TransientModelError(describe(error)) from error
        except Exception as error:
            raise ModelError(describe(error)) from error

    async def complete(self, messages: list[dict], tools: list[dict] | None = None) -> ModelReply:
        response = await self._call(messages, tools=tools)
        message = response.choices[0].message
        return ModelReply(message.content or "", usage_of(response), calls_of(getattr(message, "tool_calls", None)))

    async def stream(self, messages: list[dict], tools: list[dict] | None = None) -> AsyncIterator[Delta]:
        response = await self._call(messages, tools=tools, stream=True, stream_options={"include_usage": True})
        try:
            async for chunk in response:
                content, calls = "", ()
                if chunk.choices:
                    delta = chunk.choices[0].delta
                    content = getattr(delta, "content", None) or ""
                    calls = tuple(getattr(delta, "tool_calls", None) or ())
                usage = getattr(chunk, "usage", None)
                yield Delta(content, calls, usage_of(chunk) if usage else None)
        except self._transient as error:
            raise TransientModelError(describe(error)) from error
        finally:
            closing = getattr(response, "aclose", None)
            if closing is not None:
                await closing()

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

    @property
    def scripted_next(self) -> bool:
        """The next call is answered by DEBUG_MOCK_RESPONSES (no model is asked)."""
        return bool(self._mocks)

    async def native_tool_calling(self) -> bool:
        """Whether to offer tools natively: MODEL_TOOL_CALLING, or (auto) what litellm knows
        of the model. auto loads the model client (litellm) if it is not loaded yet."""
        mode = self.config.tool_calling
        if mode != "auto":
            return mode == "native"
        if not self.config.model_api_url or not self.config.model_name:
            return False
        try:
            return (await self.load()).function_calling
        except ModelError:
            return False  # the call itself reports the failure

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

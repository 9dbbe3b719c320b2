"""MODEL_CLIENT=acompletion: every model call through ``litellm.acompletion`` (its callbacks and cost tracking).

litellm takes seconds and more than 100 MiB to import, so it is imported only here, when this
client is built (in a worker thread, on the first model call or at startup with MODEL_PRELOAD).
It still speaks to MODEL_API_URL as an OpenAI-compatible server (``custom_llm_provider="openai"``,
MODEL_NAME sent unchanged): translating to providers without an OpenAI API is the ModelAPI's job.
"""

from __future__ import annotations

import os
import threading
from typing import AsyncIterator

from ..core.errors import describe
from ..core.settings import AgentSettings
from .chat_wire import USAGE_FIELDS, Delta, ModelError, ModelReply, TransientModelError, openai_base_url, request_body
from .tool_calls import calls_of

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


def usage_of(response) -> dict[str, int]:
    usage = getattr(response, "usage", None)
    return {name: int(getattr(usage, name, 0) or 0) for name in USAGE_FIELDS}


class AcompletionLitellm:
    def __init__(self, config: AgentSettings, api_key: str) -> None:
        self._litellm = litellm = import_litellm()
        self.model = config.model_name
        self._api_base = openai_base_url(config.model_api_url)
        self._api_key = api_key
        self._timeout = config.model_timeout or None
        self._transient = (
            litellm.APIConnectionError, litellm.Timeout, litellm.RateLimitError,
            litellm.ServiceUnavailableError, litellm.InternalServerError,
        )

    async def _call(self, messages: list[dict], tools: list[dict] | None, stream: bool):
        body = request_body(self.model, messages, tools, stream)
        try:
            return await self._litellm.acompletion(
                **body, api_base=self._api_base, api_key=self._api_key,
                custom_llm_provider="openai", timeout=self._timeout, num_retries=0,
            )
        except self._transient as error:
            raise TransientModelError(describe(error)) from error
        except Exception as error:
            raise ModelError(describe(error)) from error

    async def warm(self) -> None:
        return None

    async def complete(self, messages: list[dict], tools: list[dict] | None = None) -> ModelReply:
        response = await self._call(messages, tools, stream=False)
        message = response.choices[0].message
        return ModelReply(message.content or "", usage_of(response), calls_of(getattr(message, "tool_calls", None)))

    async def stream(self, messages: list[dict], tools: list[dict] | None = None) -> AsyncIterator[Delta]:
        response = await self._call(messages, tools, stream=True)
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

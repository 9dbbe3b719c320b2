"""The default model client (MODEL_CLIENT=direct): OpenAI chat completions over one pooled aiohttp session.

Every KAOS ModelAPI serves the OpenAI API (the LiteLLM proxy, llama.cpp, Ollama), so the agent
needs no provider translation in process: it posts the body of ``chat_wire.request_body`` to
``<MODEL_API_URL>/v1/chat/completions`` with the key as a bearer token, and reads the answer,
or the server-sent chunks of a stream, as plain JSON. litellm is not imported.
"""

from __future__ import annotations

import asyncio
import json
from typing import AsyncIterator

from ..core.errors import describe
from ..core.settings import AgentSettings
from .chat_wire import (
    Delta,
    ModelError,
    ModelReply,
    TransientModelError,
    delta_of,
    http_failure,
    openai_base_url,
    reply_of,
    request_body,
)


class OpenAIChat:
    def __init__(self, config: AgentSettings, api_key: str) -> None:
        import aiohttp

        self._aiohttp = aiohttp
        self.model = config.model_name
        base = openai_base_url(config.model_api_url)
        self.url = base + "/chat/completions"
        self._models_url = base + "/models"
        self._headers = {"Content-Type": "application/json", "Authorization": f"Bearer {api_key}"}
        self._timeout = aiohttp.ClientTimeout(total=config.model_timeout or None)
        self._session = None

    def _session_for_loop(self):
        if self._session is None or self._session.closed:
            self._session = self._aiohttp.ClientSession(timeout=self._timeout)
        return self._session

    def _unreachable(self, error: Exception) -> TransientModelError:
        return TransientModelError(f"cannot reach the model at {self.url}: {describe(error)}")

    async def _post(self, body: dict):
        try:
            return await self._session_for_loop().post(self.url, data=json.dumps(body), headers=self._headers)
        except (self._aiohttp.ClientError, asyncio.TimeoutError) as error:
            raise self._unreachable(error) from error

    async def warm(self) -> None:
        """Open the session and a pooled connection with ``GET /v1/models`` (which every
        OpenAI-compatible server answers; any answer or failure will do), so that the first
        request after Ready does not pay for them."""
        try:
            async with self._session_for_loop().get(self._models_url, headers=self._headers,
                                                    timeout=self._aiohttp.ClientTimeout(total=2)) as response:
                await response.read()
        except (self._aiohttp.ClientError, asyncio.TimeoutError):
            pass

    async def complete(self, messages: list[dict], tools: list[dict] | None = None) -> ModelReply:
        response = await self._post(request_body(self.model, messages, tools, stream=False))
        try:
            raw = await response.read()
        except (self._aiohttp.ClientError, asyncio.TimeoutError) as error:
            raise self._unreachable(error) from error
        finally:
            response.release()
        if response.status >= 400:
            raise http_failure(response.status, raw)
        try:
            payload = json.loads(raw)
        except ValueError as error:
            raise ModelError(f"the model API sent an answer that is not JSON: {describe(error)}") from error
        return reply_of(payload)

    async def stream(self, messages: list[dict], tools: list[dict] | None = None) -> AsyncIterator[Delta]:
        """The answer as server-sent chunks arrive; closing the generator drops the connection,
        so the model server sees its client go away."""
        response = await self._post(request_body(self.model, messages, tools, stream=True))
        finished = False
        try:
            if response.status >= 400:
                raise http_failure(response.status, await response.read())
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

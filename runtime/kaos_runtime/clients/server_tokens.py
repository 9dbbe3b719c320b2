"""Counting tokens with the model server's own tokenizer: llama-cpp-python's server (a Hosted
ModelAPI on llama.cpp) answers ``POST /extras/tokenize/count`` with the GGUF's tokenizer.

Whether the server has it is probed once (a 200 with a count); a LiteLLM proxy or any other
server answers otherwise, and the agent counts with tiktoken or the estimate instead."""

from __future__ import annotations

import asyncio
import json
import logging

from .http import HttpClient

log = logging.getLogger("kaos_runtime.context")

PATH = "/extras/tokenize/count"
TIMEOUT = 5.0
CONCURRENCY = 8


class ServerTokenizer:
    def __init__(self, model_api_url: str, api_key: str, model: str, http: HttpClient) -> None:
        base = model_api_url.rstrip("/")
        self.url = (base[:-3] if base.endswith("/v1") else base) + PATH
        self.model = model
        self._headers = {"content-type": "application/json", "authorization": f"Bearer {api_key}"}
        self._http = http  # the runtime's client: its owner closes it
        self._slots = asyncio.Semaphore(CONCURRENCY)

    async def _count(self, text: str) -> int | None:
        body = json.dumps({"input": text, "model": self.model}).encode()
        async with self._slots:
            try:
                status, answer = await self._http.request("POST", self.url, body, self._headers, TIMEOUT)
            except Exception as error:  # the server went away, a timeout: the estimate stands in
                log.debug("tokenize: %s", error)
                return None
        if status != 200:
            return None
        try:
            count = json.loads(answer).get("count")
        except (ValueError, AttributeError):
            return None
        return count if type(count) is int and count >= 0 else None

    async def available(self) -> bool:
        """Does the server count tokens?"""
        return await self._count("probe") is not None

    async def count(self, texts: list[str]) -> list[int | None]:
        """Each text's count, concurrently; None where the server did not answer."""
        return list(await asyncio.gather(*(self._count(text) for text in texts)))

"""The embedder: an OpenAI-compatible ModelAPI's ``POST {url}/v1/embeddings``. It runs outside
the agent (a LiteLLM proxy for providers; offline, ``kaos_runtime.engines.embeddings_server``)."""

from __future__ import annotations

import httpx

MAX_BATCH = 64  # texts per request


class EmbedderUnavailable(Exception):
    """The embedder cannot be reached or answered something else than embeddings."""


def embeddings_url(base: str) -> str:
    base = base.rstrip("/")
    return base + ("/embeddings" if base.endswith("/v1") else "/v1/embeddings")


def vectors_of(body: object, count: int) -> list[list[float]]:
    """The vectors of an embeddings answer, in the order of the inputs (pure)."""
    try:
        data = sorted(body["data"], key=lambda item: item["index"])  # type: ignore[index]
        vectors = [[float(x) for x in item["embedding"]] for item in data]
    except (KeyError, TypeError, ValueError) as error:
        raise EmbedderUnavailable(f"the embedder's answer holds no embeddings ({error})") from None
    if len(vectors) != count or not vectors or any(len(v) != len(vectors[0]) or not v for v in vectors):
        raise EmbedderUnavailable(f"the embedder answered {len(vectors)} vectors for {count} texts")
    return vectors


class Embedder:
    def __init__(self, url: str, model: str, api_key: str, timeout: float) -> None:
        self.url, self.model, self.timeout = embeddings_url(url), model, timeout
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client: httpx.AsyncClient | None = None

    async def embed(self, texts: list[str]) -> list[list[float]]:
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self.timeout)
        vectors: list[list[float]] = []
        for start in range(0, len(texts), MAX_BATCH):
            batch = texts[start:start + MAX_BATCH]
            try:
                response = await self._client.post(self.url, json={"model": self.model, "input": batch},
                                                    headers=self._headers)
            except httpx.HTTPError as error:
                raise EmbedderUnavailable(f"embedder {self.url} unreachable: {type(error).__name__} {error}") from None
            if response.status_code != 200:
                raise EmbedderUnavailable(f"embedder {self.url} answered HTTP {response.status_code}: "
                                          f"{response.text[:200]}")
            try:
                body = response.json()
            except ValueError:
                raise EmbedderUnavailable(f"embedder {self.url} answered no JSON") from None
            vectors.extend(vectors_of(body, len(batch)))
        return vectors

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()

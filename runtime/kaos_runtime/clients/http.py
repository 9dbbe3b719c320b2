"""One pooled aiohttp session for the agent's own outbound HTTP (peers, cards)."""

from __future__ import annotations


class HttpClient:
    def __init__(self) -> None:
        self._session = None

    def _client(self):
        import aiohttp

        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession()
        return self._session

    async def request(self, method: str, url: str, body: bytes | None = None,
                      headers: dict | None = None, timeout: float | None = None) -> tuple[int, bytes]:
        import aiohttp

        limit = aiohttp.ClientTimeout(total=timeout or None)
        async with self._client().request(method, url, data=body, headers=headers, timeout=limit) as response:
            return response.status, await response.read()

    @staticmethod
    def unsent(error: BaseException) -> bool:
        """Whether a request failed before anything of it was sent: no connection could be made
        (refused, a name that does not resolve, ...)."""
        import aiohttp

        return isinstance(error, aiohttp.ClientConnectorError)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()

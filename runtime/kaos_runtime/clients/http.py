"""One pooled aiohttp session for the agent's own outbound HTTP (peers, cards).

A connection is given ``CONNECT_TIMEOUT_SECONDS`` to open, apart from the call's own timeout: a
peer whose pod vanished with its address (its Service still pointing there for a moment) may
answer a connect with nothing at all, and a delegation must not wait PEER_TIMEOUT_SECONDS for it.
Nothing was sent then, so it counts as unsent and is tried again (clients/connect_retry.py)."""

from __future__ import annotations

CONNECT_TIMEOUT_SECONDS = 5.0


class HttpClient:
    def __init__(self, connect_timeout: float = CONNECT_TIMEOUT_SECONDS) -> None:
        self._session = None
        self.connect_timeout = connect_timeout

    def _client(self):
        import aiohttp

        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession()
        return self._session

    async def request(self, method: str, url: str, body: bytes | None = None,
                      headers: dict | None = None, timeout: float | None = None) -> tuple[int, bytes]:
        import aiohttp

        limit = aiohttp.ClientTimeout(total=timeout or None, sock_connect=self.connect_timeout)
        async with self._client().request(method, url, data=body, headers=headers, timeout=limit) as response:
            return response.status, await response.read()

    @staticmethod
    def unsent(error: BaseException) -> bool:
        """Whether a request failed before anything of it was sent: no connection could be made
        (refused, a name that does not resolve, no answer to the connect in time, ...)."""
        import aiohttp

        return isinstance(error, (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError))

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()

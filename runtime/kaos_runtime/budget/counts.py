"""Where a budget's token counts live: this process (``LocalCounts``) or Redis (``RedisCounts``)."""

from __future__ import annotations


class LocalCounts:
    """Counts of this process: {key: (window number, tokens)}."""

    def __init__(self) -> None:
        self._counts: dict[str, tuple[int, int]] = {}

    async def used(self, keys: list[tuple[str, int]]) -> list[int]:
        counts, used = self._counts, []
        for key, window in keys:
            number, count = counts.get(key, (-1, 0))
            used.append(count if number == window else 0)
        return used

    async def add(self, keys: list[tuple[str, int, int]], tokens: int) -> None:
        for key, window, _ in keys:
            number, count = self._counts.get(key, (window, 0))
            self._counts[key] = (window, (count if number == window else 0) + tokens)

    async def close(self) -> None:
        pass


class RedisCounts:
    """Counts in Redis, shared by replicas: key ``<prefix>:<key>:<window number>``."""

    def __init__(self, url: str, prefix: str, timeout: float) -> None:
        from ..core.redis_client import redis_client  # here: an agent without Redis never imports redis

        self.prefix = prefix
        self.client = redis_client(url, timeout)

    async def used(self, keys: list[tuple[str, int]]) -> list[int]:
        values = await self.client.mget([f"{self.prefix}:{key}:{window}" for key, window in keys])
        return [int(value or 0) for value in values]

    async def add(self, keys: list[tuple[str, int, int]], tokens: int) -> None:
        async with self.client.pipeline(transaction=False) as pipe:
            for key, window, seconds in keys:
                name = f"{self.prefix}:{key}:{window}"
                pipe.incrby(name, tokens)
                pipe.expire(name, seconds + 60)
            await pipe.execute()

    async def close(self) -> None:
        await self.client.aclose()

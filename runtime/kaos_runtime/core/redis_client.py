"""The one way the runtime connects to Redis (memory, approvals, budgets): one client per store,
decoded strings, the memory settings' timeout for connecting and for each command, and one
retry policy.

The policy is a single retry on a fresh connection after a connection error or a timeout: it
covers a pooled connection that Redis closed (a restart, an idle timeout); more retries would
only make a client wait longer for its 503."""

from __future__ import annotations

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError


def redis_client(url: str, timeout: float) -> aioredis.Redis:
    return aioredis.Redis.from_url(
        url.strip(), decode_responses=True, socket_timeout=timeout, socket_connect_timeout=timeout,
        retry=Retry(NoBackoff(), 1), retry_on_error=[RedisConnectionError, RedisTimeoutError],
    )


def describe_url(client: aioredis.Redis) -> str:
    """Where Redis is, without credentials: ``host:port/db`` or the socket path."""
    kwargs = client.connection_pool.connection_kwargs
    if "path" in kwargs:
        return f"unix:{kwargs['path']}"
    return f"{kwargs.get('host', 'localhost')}:{kwargs.get('port', 6379)}/{kwargs.get('db', 0)}"

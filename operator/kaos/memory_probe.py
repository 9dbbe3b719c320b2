"""Whether a MemoryStore's store and embedder answer (the I/O behind its status).

``MemoryProbes`` is the one component both control planes use, as ``ToolDiscovery`` is for MCP
tools: per MemoryStore it asks the store and the embedder in a background task, each with a
bounded timeout, keeps the last answer, and asks again every ``every`` seconds with jitter (so
many stores do not probe in step). A reconcile only reads the last answer (``known``), so an
unreachable database never holds up a control plane's loop; ``on_change`` is told when an
answer differs from the last, to have the store's status written again.

The store: a PostgreSQL is asked with the protocol's SSLRequest (eight bytes, answered with one
byte by any PostgreSQL before authentication, so no credential is needed); an embedded sqlite
file's folder must be creatable and writable. The embedder: ``POST <url>/v1/embeddings`` for the
store's model; an answer 401/403 counts as answering (the control plane holds no key of a
guarded ModelAPI).
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import struct
from typing import Awaitable, Callable, Hashable
from urllib.parse import unquote, urlsplit

import httpx

from kaos.reconcile.memorystore import Probe, ProbeTarget

PROBE_TIMEOUT_SECONDS = 3.0
RECHECK_SECONDS = 30.0
JITTER = 0.2
POSTGRES_PORT = 5432
# The protocol's SSLRequest: length 8, then the request code 1234.5679.
SSL_REQUEST = struct.pack("!ii", 8, 80877103)
ERROR_SHOWN_MAX = 200

log = logging.getLogger("kaos.memory_probe")


async def probe_store(url: str, timeout: float) -> str:
    """"" when the store answers, else why not."""
    if not url:
        return ""  # an embedded file inside an agent's pod: nothing the control plane can ask
    parts = urlsplit(url)
    if parts.scheme == "sqlite":
        return await asyncio.to_thread(_writable_folder, unquote(parts.path))
    host, port = parts.hostname or "localhost", parts.port or POSTGRES_PORT
    where = f"PostgreSQL at {host}:{port}"
    try:
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection(host, port)
            try:
                writer.write(SSL_REQUEST)
                await writer.drain()
                answer = await reader.read(1)
            finally:
                writer.close()
    except TimeoutError:
        return f"{where} did not answer within {timeout:g}s"
    except OSError as error:
        return f"cannot connect to {where}: {_shown(error)}"
    if answer not in (b"S", b"N"):
        return f"{where} answered {answer!r}, not as a PostgreSQL server does"
    return ""


def _writable_folder(path: str) -> str:
    folder = os.path.dirname(path)
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as error:
        return f"cannot create the folder of {path}: {_shown(error)}"
    return "" if os.access(folder, os.W_OK) else f"the folder of {path} is not writable"


async def probe_embedder(url: str, model: str, timeout: float) -> str:
    """"" when the embedder answers for ``model``, else why not."""
    endpoint = url.rstrip("/") + "/v1/embeddings"
    try:
        async with httpx.AsyncClient(timeout=timeout) as client:
            response = await client.post(endpoint, json={"model": model, "input": "kaos memory probe"})
    except httpx.TimeoutException:
        return f"{endpoint} did not answer within {timeout:g}s"
    except httpx.HTTPError as error:
        return f"cannot reach {endpoint}: {_shown(error) or type(error).__name__}"
    if response.is_success or response.status_code in (401, 403):
        return ""
    return f"{endpoint} answered HTTP {response.status_code} for model {model!r}: {_shown(response.text)}"


async def probe(target: ProbeTarget, timeout: float) -> Probe:
    """Both questions at once, each bounded by ``timeout``."""
    asked = [probe_embedder(target.embedding_url, target.embedding_model, timeout)]
    if not target.store_problem:  # a store that cannot even be asked (a missing Secret) is not
        asked.append(probe_store(target.store_url, timeout))
    answers = await asyncio.gather(*asked)
    return Probe(target.store_problem or answers[1], answers[0])


def _shown(value: object) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= ERROR_SHOWN_MAX else text[:ERROR_SHOWN_MAX - 3] + "..."


class MemoryProbes:
    """The last answer per MemoryStore, kept fresh in the background."""

    def __init__(self, on_change: Callable[[Hashable], None] = lambda key: None, *,
                 timeout: float = PROBE_TIMEOUT_SECONDS, every: float = RECHECK_SECONDS, jitter: float = JITTER,
                 ask: Callable[[ProbeTarget, float], Awaitable[Probe]] = probe):
        self.on_change = on_change
        self.timeout, self.every, self.jitter = timeout, every, jitter
        self._ask = ask
        self._answers: dict[Hashable, tuple[ProbeTarget, Probe]] = {}
        self._tasks: dict[Hashable, tuple[ProbeTarget, asyncio.Task]] = {}

    def known(self, key: Hashable, target: ProbeTarget) -> Probe | None:
        """The last answer for ``target``, None until there is one; (re)starts the key's probing
        when its target is new."""
        running = self._tasks.get(key)
        if running is None or running[0] != target or running[1].done():
            if running is not None:
                running[1].cancel()
            self._tasks[key] = (target, asyncio.create_task(self._keep_asking(key, target), name=f"memory {key}"))
        answer = self._answers.get(key)
        return answer[1] if answer is not None and answer[0] == target else None

    async def _keep_asking(self, key: Hashable, target: ProbeTarget) -> None:
        while True:
            try:
                answer = await self._ask(target, self.timeout)
            except Exception as error:  # a bug in a probe must not end the probing; it reads as no answer
                log.exception("memory probe of %s failed", key)
                answer = Probe(f"the probe failed: {_shown(error)}", "")
            if self._answers.get(key) != (target, answer):
                self._answers[key] = (target, answer)
                self.on_change(key)
            await asyncio.sleep(self.every * random.uniform(1 - self.jitter, 1 + self.jitter))

    def forget(self, key: Hashable) -> None:
        running = self._tasks.pop(key, None)
        if running is not None:
            running[1].cancel()
        self._answers.pop(key, None)

    async def close(self) -> None:
        tasks = [task for _, task in self._tasks.values()]
        self._tasks.clear()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

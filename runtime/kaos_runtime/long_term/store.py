"""The vector store behind long-term memory: one interface, two backends.

- ``postgresql://`` (``PgVectorStore``): PostgreSQL with pgvector, an HNSW index on cosine
  distance; the cluster's default (a server the platform chart runs, or the user's own).
- ``sqlite:///<abs path>`` (``SqliteVecStore``): the embedded default of ``kaos up``: SQLite with
  the sqlite-vec extension in the agent's process, one file that several agents may share.

Each collection is one table (``records.table_name``); every call is for one owner, so one
owner's memories never reach another's answers. A backend that cannot be reached raises
``StoreUnavailable``. The table is created with the dimension of the first vector stored; a
vector of another dimension (another embedding model) is refused with a clear message.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from .records import Hit, NewMemory, Record


class StoreUnavailable(Exception):
    """The store cannot be reached or refused the call; the message says which and why (no secrets)."""


class VectorStore(ABC):
    backend = ""

    @abstractmethod
    async def add(self, memories: list[NewMemory]) -> None: ...

    @abstractmethod
    async def search(self, owner: str, vector: list[float], k: int) -> list[Hit]:
        """The ``k`` memories of ``owner`` nearest to ``vector``, nearest first."""

    @abstractmethod
    async def list(self, owner: str, limit: int, offset: int = 0) -> tuple[list[Record], int]:
        """``owner``'s memories, newest first, and how many there are."""

    @abstractmethod
    async def delete(self, owner: str, memory_id: str) -> bool:
        """Forget one of ``owner``'s memories (its row and its index entry); False: none such."""

    @abstractmethod
    async def delete_all(self, owner: str) -> int:
        """Forget every memory of ``owner``; how many there were."""

    @abstractmethod
    async def delete_older(self, before: float) -> int:
        """Forget every memory created before ``before`` (unix seconds): retention."""

    @abstractmethod
    async def ping(self) -> None:
        """Raise StoreUnavailable when the store cannot be reached."""

    async def close(self) -> None:
        """Release connections."""


def redacted(url: str) -> str:
    """A store URL without its password, for messages and logs."""
    scheme, sep, rest = url.partition("://")
    credentials, at, host = rest.rpartition("@")
    if not at:
        return url
    user = credentials.partition(":")[0]
    return f"{scheme}{sep}{user}:***@{host}"

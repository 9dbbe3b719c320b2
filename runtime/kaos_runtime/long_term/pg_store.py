"""``PgVectorStore``: long-term memory in PostgreSQL with pgvector (the cluster's default).

One table per collection with an HNSW index on cosine distance and a b-tree on the owner. A
search asks the index for the owner's nearest rows; an HNSW scan filters after it walks the
graph, so when it finds fewer than ``k`` rows and the owner has more, the search is done again
exactly (no index), which an owner with few memories among many costs little.

Forgetting is erasure: the rows are deleted and the table vacuumed at once, which removes their
entries from the HNSW and b-tree indexes (a delete alone leaves them until autovacuum).
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone

from .records import Hit, NewMemory, Record, table_name
from .store import StoreUnavailable, VectorStore, redacted

_COLUMNS = "id, owner, text, extract(epoch from created_at)::float8, session_id, source"
EF_SEARCH = 100  # candidates the HNSW scan keeps (pgvector's default is 40)


def literal(vector: list[float]) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in vector) + "]"


def timestamp(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, timezone.utc)


class PgVectorStore(VectorStore):
    backend = "postgresql"

    def __init__(self, url: str, collection: str, timeout: float) -> None:
        self.url = url
        self.table = table_name(collection)
        self.timeout = timeout
        self._connection = None
        self._dimension: int | None = None
        self._lock = asyncio.Lock()

    async def _connect(self):
        import psycopg

        if self._connection is not None and not self._connection.closed:
            return self._connection
        self._connection = None
        connection = await psycopg.AsyncConnection.connect(self.url, autocommit=True,
                                                           connect_timeout=max(1, int(self.timeout)))
        await connection.execute("create extension if not exists vector")
        await connection.execute(f"set hnsw.ef_search = {EF_SEARCH}")
        await connection.execute(f"set statement_timeout = {int(self.timeout * 1000)}")
        row = await (await connection.execute(
            "select atttypmod from pg_attribute where attrelid = to_regclass(%s) and attname = 'embedding'",
            (f'"{self.table}"',))).fetchone()
        self._dimension = row[0] if row else None
        self._connection = connection
        return connection

    async def _run(self, work):
        import psycopg

        async with self._lock:
            try:
                return await asyncio.wait_for(work(await self._connect()), self.timeout * 2)
            except (psycopg.Error, OSError, asyncio.TimeoutError) as error:
                if self._connection is not None and (self._connection.closed or not isinstance(error, psycopg.Error)):
                    await self._connection.close()
                    self._connection = None
                raise StoreUnavailable(f"postgresql store {redacted(self.url)}: "
                                       f"{str(error).strip() or type(error).__name__}") from None

    async def _table_for(self, connection, dimension: int) -> None:
        if self._dimension is None:
            await connection.execute(
                f'create table if not exists "{self.table}" (id text primary key, owner text not null, '
                'text text not null, created_at timestamptz not null, session_id text not null, '
                f'source text not null, embedding vector({dimension}) not null)')
            await connection.execute(
                f'create index if not exists "{self.table}_owner" on "{self.table}" (owner, created_at)')
            await connection.execute(f'create index if not exists "{self.table}_hnsw" on "{self.table}" '
                                     'using hnsw (embedding vector_cosine_ops)')
            self._dimension = dimension
        if self._dimension != dimension:
            raise StoreUnavailable(f"collection {self.table} holds vectors of {self._dimension} dimensions, the "
                                   f"embedder gives {dimension} (another embedding model needs another collection)")

    async def add(self, memories: list[NewMemory]) -> None:
        if not memories:
            return

        async def work(connection):
            await self._table_for(connection, len(memories[0].vector))
            async with connection.cursor() as cursor:
                await cursor.executemany(
                    f'insert into "{self.table}" (id, owner, text, created_at, session_id, source, embedding) '
                    'values (%s, %s, %s, %s, %s, %s, %s::vector)',
                    [(m.id, m.owner, m.text, timestamp(m.created_at), m.session_id, m.source, literal(m.vector))
                     for m in memories])

        await self._run(work)

    async def search(self, owner: str, vector: list[float], k: int) -> list[Hit]:
        async def work(connection):
            if self._dimension is None:
                return []
            await self._table_for(connection, len(vector))
            query = (f'select {_COLUMNS}, embedding <=> %(v)s::vector from "{self.table}" where owner = %(o)s '
                     'order by embedding <=> %(v)s::vector limit %(k)s')
            parameters = {"v": literal(vector), "o": owner, "k": k}
            rows = await (await connection.execute(query, parameters)).fetchall()
            if len(rows) < k:
                total = (await (await connection.execute(
                    f'select count(*) from "{self.table}" where owner = %s', (owner,))).fetchone())[0]
                if total > len(rows):  # the HNSW scan's candidates were mostly others': exactly
                    async with connection.transaction():
                        await connection.execute("set local enable_indexscan = off")
                        rows = await (await connection.execute(query, parameters)).fetchall()
            return [Hit(Record(*row[:6]), float(row[6])) for row in rows]

        return await self._run(work)

    async def list(self, owner: str, limit: int, offset: int = 0) -> tuple[list[Record], int]:
        async def work(connection):
            if self._dimension is None:
                return [], 0
            rows = await (await connection.execute(
                f'select {_COLUMNS} from "{self.table}" where owner = %s order by created_at desc, id '
                'limit %s offset %s', (owner, limit, offset))).fetchall()
            total = (await (await connection.execute(
                f'select count(*) from "{self.table}" where owner = %s', (owner,))).fetchone())[0]
            return [Record(*row) for row in rows], total

        return await self._run(work)

    async def _erase(self, where: str, parameters: tuple) -> int:
        async def work(connection):
            if self._dimension is None:
                return 0
            cursor = await connection.execute(f'delete from "{self.table}" where {where}', parameters)
            if cursor.rowcount:
                await connection.execute(f'vacuum "{self.table}"')  # their index entries go now
            return cursor.rowcount

        return await self._run(work)

    async def delete(self, owner: str, memory_id: str) -> bool:
        return bool(await self._erase("owner = %s and id = %s", (owner, memory_id)))

    async def delete_all(self, owner: str) -> int:
        return await self._erase("owner = %s", (owner,))

    async def delete_older(self, before: float) -> int:
        return await self._erase("created_at < %s", (timestamp(before),))

    async def ping(self) -> None:
        async def work(connection):
            await connection.execute("select 1")

        await self._run(work)

    async def close(self) -> None:
        if self._connection is not None:
            await self._connection.close()
            self._connection = None

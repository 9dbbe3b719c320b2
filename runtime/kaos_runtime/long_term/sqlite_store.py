"""``SqliteVecStore``: long-term memory in one SQLite file with sqlite-vec (the embedded default).

Why this one: it is two pip packages (``sqlite-vec``, and ``apsw`` for a SQLite that loads
extensions: many Pythons' own ``sqlite3`` cannot), it runs in the agent's process with no server,
and it keeps its vectors in the file, paged in by SQLite, not in the agent's memory; several
agent processes may share the file (WAL, a busy timeout). A ``vec0`` table with the owner as its
partition key holds the vectors, so a search scans only its owner's memories. sqlite-vec has no
graph index; it scans the partition. So that a scan of 100k memories stays within a few
milliseconds, each vector is also kept quantized to one bit per dimension (48 bytes for 384
dimensions instead of 1,536) in the ``vec0`` table, the full vector in the memory's row: one
statement scans the bits by Hamming distance for ``COARSE_CANDIDATES`` candidates and ranks
those by the exact cosine distance of their full vectors, read by rowid. The candidate count is
what the scan costs: sqlite-vec picks the ``k`` nearest of each chunk of 1,024 vectors in ``k``
passes, so at 100k memories 100 candidates took about 12 ms of CPU and 30 about 6 (3.5 for 5);
30 keep recall@5 at 0.99 and 99 % of the exact top 5 on the benchmark's real sentences
(benchmarks/long_term_bench.py). The file is read through ``mmap`` (no copy of each page into
SQLite's cache). A dimension that is no multiple of 8 keeps full vectors in ``vec0`` and is
searched exactly.

Forgetting is erasure: a full vector in ``vec0`` is overwritten with zeros before its row is deleted,
``secure_delete`` makes SQLite overwrite what it frees in both tables, and a checkpoint empties
the write-ahead log, which still held the pages as they were (tests/runtime/test_long_term_store.py
looks for the text and the vector's bytes in the files).
"""

from __future__ import annotations

import array
import asyncio
import importlib.util
import threading
from pathlib import Path

from .records import Hit, NewMemory, Record, table_name
from .store import StoreUnavailable, VectorStore

_COLUMNS = "id, owner, text, created_at, session_id, source"
COARSE_CANDIDATES = 30  # ranked exactly after the one-bit scan (at least 6 per memory asked for)
MMAP_BYTES = 1 << 30  # how much of the file SQLite reads through mmap (address space, not memory)


def packed(vector: list[float]) -> bytes:
    return array.array("f", vector).tobytes()



def vec_extension_path() -> str:
    """sqlite-vec's loadable extension (``vec0`` beside the package's files), found without
    importing the package: its ``__init__`` imports the standard sqlite3 module and numpy
    (about 20 MiB of an agent's RSS) for helpers KAOS does not use."""
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        raise StoreUnavailable("sqlite-vec is not installed (pip install sqlite-vec)")
    return str(Path(next(iter(spec.submodule_search_locations))) / "vec0")

class SqliteVecStore(VectorStore):
    backend = "sqlite"

    def __init__(self, path: str, collection: str, timeout: float) -> None:
        self.path = path
        self.table = table_name(collection)
        self.vectors = self.table + "_vec"
        self.timeout = timeout
        self._connection = None
        self._dimension: int | None = None
        self._coarse = False  # the table keeps one-bit vectors too (a dimension that is a multiple of 8)
        self._lock = threading.Lock()

    def _connect(self):
        if self._connection is not None:
            return self._connection
        import apsw

        if not Path(self.path).is_absolute():
            raise StoreUnavailable(f"sqlite store path {self.path!r} is not absolute (sqlite:///abs/path.db)")
        try:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            connection = apsw.Connection(self.path)
            connection.enable_load_extension(True)
            connection.load_extension(vec_extension_path())
            connection.enable_load_extension(False)
            connection.set_busy_timeout(int(self.timeout * 1000))
            for pragma in ("journal_mode=wal", "secure_delete=on", "synchronous=normal", f"mmap_size={MMAP_BYTES}"):
                connection.execute(f"pragma {pragma}").fetchall()  # one at a time: apsw runs what is fetched
            connection.execute(
                f'create table if not exists "{self.table}" (rowid integer primary key, id text unique not null, '
                'owner text not null, text text not null, created_at real not null, session_id text not null, '
                'source text not null, embedding blob not null)')
            connection.execute(f'create index if not exists "{self.table}_owner" on "{self.table}" (owner, created_at)')
        except (apsw.Error, OSError) as error:
            raise StoreUnavailable(f"sqlite store {self.path}: {error}") from None
        self._connection = connection
        self._dimension = self._existing_dimension()
        return connection

    def _existing_dimension(self) -> int | None:
        row = self._connection.execute("select sql from sqlite_master where name = ?", (self.vectors,)).fetchone()
        if row is None:
            return None
        self._coarse = "coarse bit[" in row[0]
        return int(row[0].split("bit[" if self._coarse else "float[", 1)[1].split("]", 1)[0])

    def _vectors_for(self, dimension: int) -> None:
        if self._dimension is None:
            self._connection.execute(
                f'create virtual table if not exists "{self.vectors}" using vec0(owner text partition key, '
                + (f'coarse bit[{dimension}])' if dimension % 8 == 0 else
                   f'embedding float[{dimension}] distance_metric=cosine)'))
            self._dimension = self._existing_dimension()
        if self._dimension != dimension:
            raise StoreUnavailable(f"collection {self.table} holds vectors of {self._dimension} dimensions, the "
                                   f"embedder gives {dimension} (another embedding model needs another collection)")

    async def _run(self, work):
        def locked():
            import apsw

            with self._lock:
                try:
                    return work(self._connect())
                except apsw.Error as error:
                    raise StoreUnavailable(f"sqlite store {self.path}: {error}") from None

        return await asyncio.to_thread(locked)

    async def add(self, memories: list[NewMemory]) -> None:
        if not memories:
            return

        def work(connection):
            self._vectors_for(len(memories[0].vector))
            with connection:
                for memory in memories:
                    vector = packed(memory.vector)
                    connection.execute(
                        f'insert into "{self.table}" (id, owner, text, created_at, session_id, source, embedding) '
                        'values (?, ?, ?, ?, ?, ?, ?)',
                        (memory.id, memory.owner, memory.text, memory.created_at, memory.session_id, memory.source,
                         vector))
                    rowid = connection.last_insert_rowid()
                    if self._coarse:
                        connection.execute(f'insert into "{self.vectors}" (rowid, owner, coarse) '
                                           'values (?, ?, vec_quantize_binary(?))', (rowid, memory.owner, vector))
                    else:
                        connection.execute(f'insert into "{self.vectors}" (rowid, owner, embedding) values (?, ?, ?)',
                                           (rowid, memory.owner, vector))

        await self._run(work)

    async def search(self, owner: str, vector: list[float], k: int) -> list[Hit]:
        def work(connection):
            if self._dimension is None:
                return []
            self._vectors_for(len(vector))
            query, columns = packed(vector), ", ".join("r." + c for c in _COLUMNS.split(", "))
            if not self._coarse:
                rows = connection.execute(
                    f'with knn as (select rowid, distance from "{self.vectors}" where embedding match ? and k = ? '
                    f'and owner = ?) select {columns}, knn.distance from knn join "{self.table}" r '
                    'on r.rowid = knn.rowid order by knn.distance', (query, k, owner)).fetchall()
                return [Hit(Record(*row[:6]), float(row[6])) for row in rows]
            rows = connection.execute(
                f'with coarse as (select rowid from "{self.vectors}" where coarse match vec_quantize_binary(?) '
                f'and k = ? and owner = ?) select {columns}, vec_distance_cosine(r.embedding, ?) as distance '
                f'from coarse join "{self.table}" r on r.rowid = coarse.rowid order by distance limit ?',
                (query, max(COARSE_CANDIDATES, 6 * k), owner, query, k)).fetchall()
            return [Hit(Record(*row[:6]), float(row[6])) for row in rows]

        return await self._run(work)

    async def list(self, owner: str, limit: int, offset: int = 0) -> tuple[list[Record], int]:
        def work(connection):
            rows = connection.execute(
                f'select {_COLUMNS} from "{self.table}" where owner = ? order by created_at desc, rowid desc '
                'limit ? offset ?', (owner, limit, offset)).fetchall()
            total = connection.execute(f'select count(*) from "{self.table}" where owner = ?', (owner,)).fetchone()[0]
            return [Record(*row) for row in rows], total

        return await self._run(work)

    def _erase(self, connection, where: str, parameters: tuple) -> int:
        rowids = [row[0] for row in connection.execute(f'select rowid from "{self.table}" where {where}', parameters)]
        if not rowids:
            return 0
        with connection:
            for rowid in rowids:
                if self._dimension is not None:
                    if not self._coarse:
                        zeros = packed([0.0] * self._dimension)
                        connection.execute(f'update "{self.vectors}" set embedding = ? where rowid = ?',
                                           (zeros, rowid))
                    # A one-bit sketch goes with its row (sqlite-vec 0.1.9 cannot update a bit column).
                    connection.execute(f'delete from "{self.vectors}" where rowid = ?', (rowid,))
                connection.execute(f'delete from "{self.table}" where rowid = ?', (rowid,))
        # The write-ahead log still holds the pages as they were: fold it into the file and empty it.
        connection.execute("pragma wal_checkpoint(truncate)").fetchall()
        return len(rowids)

    async def delete(self, owner: str, memory_id: str) -> bool:
        return bool(await self._run(lambda connection: self._erase(connection, "owner = ? and id = ?",
                                                                   (owner, memory_id))))

    async def delete_all(self, owner: str) -> int:
        return await self._run(lambda connection: self._erase(connection, "owner = ?", (owner,)))

    async def delete_older(self, before: float) -> int:
        return await self._run(lambda connection: self._erase(connection, "created_at < ?", (before,)))

    async def ping(self) -> None:
        await self._run(lambda connection: connection.execute("select 1").fetchone())

    async def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None

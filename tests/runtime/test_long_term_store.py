"""The long-term memory stores against real backends: SQLite with sqlite-vec (a file) and
PostgreSQL with pgvector (a real server, tests/support/postgres_server.py).

The same behaviour from both: nearest first, one owner never sees another's memories, listing
newest first, forgetting one or all, retention, collections apart; and forgetting erases (the
rows and their index entries: for SQLite the files no longer hold the text or the vector's
bytes, for PostgreSQL the table is vacuumed so no dead tuple, and so no index entry, is left).
"""

from __future__ import annotations

import asyncio
import math
import random
import subprocess
import sys
from pathlib import Path

import pytest

from kaos_runtime.long_term import create_store
from kaos_runtime.long_term.pg_store import PgVectorStore
from kaos_runtime.long_term.records import NewMemory, table_name
from kaos_runtime.long_term.sqlite_store import COARSE_CANDIDATES, MMAP_BYTES, SqliteVecStore, packed
from kaos_runtime.long_term.store import StoreUnavailable
from tests.support.polling import wait_until
from tests.support.postgres_server import PostgresServer

DIMENSION = 16


@pytest.fixture(scope="module")
def postgres():
    server = PostgresServer().start()
    yield server
    server.remove()


@pytest.fixture(params=["sqlite", "postgresql"])
def make_store(request, tmp_path, postgres):
    made = []

    def make(collection: str = "ns-memories"):
        if request.param == "sqlite":
            store = create_store(f"sqlite://{tmp_path}/memories.db", collection, 5)
        else:
            store = create_store(postgres.url, f"{collection}-{tmp_path.name}", 5)
        made.append(store)
        return store

    yield make
    for store in made:
        asyncio.run(store.close())


def unit(seed: int) -> list[float]:
    rng = random.Random(seed)
    vector = [rng.gauss(0, 1) for _ in range(DIMENSION)]
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector]


def memory(owner: str, text: str, seed: int, created: float = 1000.0) -> NewMemory:
    return NewMemory(owner, text, unit(seed), created, "session-1", "tool")


def run(work):
    return asyncio.run(work)


def test_nearest_first_and_only_the_owners(make_store):
    store = make_store()
    alice = [memory("key:1", f"alice fact {n}", n, 1000 + n) for n in range(6)]
    bob = [memory("key:2", "bob fact", 0)]  # the very vector of alice's first

    async def work():
        await store.add(alice + bob)
        hits = await store.search("key:1", alice[3].vector, 3)
        theirs = await store.search("key:2", alice[0].vector, 5)
        nobody = await store.search("key:3", alice[0].vector, 5)
        listed, total = await store.list("key:1", 4)
        return hits, theirs, nobody, listed, total

    hits, theirs, nobody, listed, total = run(work())
    assert hits[0].record.text == "alice fact 3" and hits[0].distance == pytest.approx(0, abs=1e-5)
    assert [h.distance for h in hits] == sorted(h.distance for h in hits)
    assert all(h.record.owner == "key:1" for h in hits)
    assert [h.record.text for h in theirs] == ["bob fact"]
    assert nobody == []
    assert total == 6 and [r.text for r in listed] == [f"alice fact {n}" for n in (5, 4, 3, 2)]


def test_an_owner_with_few_memories_among_many_still_gets_k(make_store):
    """PostgreSQL's HNSW scan filters by owner after the graph walk: the exact search takes over."""
    store = make_store()
    many = [memory("key:1", f"a{n}", n) for n in range(300)]
    few = [memory("key:2", f"b{n}", 1000 + n) for n in range(3)]
    hits = run(_add_then_search(store, many + few, "key:2", unit(5), 3))
    assert sorted(h.record.text for h in hits) == ["b0", "b1", "b2"]


async def _add_then_search(store, memories, owner, vector, k):
    await store.add(memories)
    return await store.search(owner, vector, k)


def test_forget_one_all_and_by_age(make_store):
    store = make_store()
    mine = [memory("key:1", f"m{n}", n, created=1000 + n) for n in range(4)]
    other = memory("key:2", "theirs", 9, created=10)

    async def work():
        await store.add(mine + [other])
        refused = await store.delete("key:2", mine[0].id)  # not theirs: nothing happens
        deleted = await store.delete("key:1", mine[0].id)
        again = await store.delete("key:1", mine[0].id)
        old = await store.delete_older(1002)  # m1 (1001) and theirs (10)
        left = [r.text for r in (await store.list("key:1", 10))[0]]
        everything = await store.delete_all("key:1")
        return refused, deleted, again, old, left, everything, await store.list("key:1", 10), \
            await store.search("key:1", mine[2].vector, 5)

    refused, deleted, again, old, left, everything, listed, hits = run(work())
    assert (refused, deleted, again) == (False, True, False)
    assert old == 2 and left == ["m3", "m2"]
    assert everything == 2 and listed == ([], 0) and hits == []


def test_collections_never_mix(make_store):
    first, second = make_store("ns-a"), make_store("ns_a")  # the same once cleaned: two tables all the same

    async def work():
        await first.add([memory("key:1", "in a", 1)])
        return await second.search("key:1", unit(1), 5), await first.search("key:1", unit(1), 5)

    other, own = run(work())
    assert other == [] and [h.record.text for h in own] == ["in a"]


def test_another_dimension_is_refused_clearly(make_store):
    store = make_store()
    run(store.add([memory("key:1", "sixteen", 1)]))
    with pytest.raises(StoreUnavailable, match="16 dimensions, the embedder gives 3"):
        run(store.add([NewMemory("key:1", "three", [1.0, 0.0, 0.0], 1.0)]))


def test_table_names_are_sql_identifiers_and_distinct():
    names = {table_name(name) for name in ("ns-a", "ns_a", "NS-A", 'x"; drop table y; --', "a" * 300)}
    assert len(names) == 5
    assert all(name.replace("_", "").isalnum() and name.islower() and len(name) <= 48 for name in names)


def test_sqlite_forgetting_erases_the_text_and_the_vector_from_the_files(tmp_path):
    path = tmp_path / "memories.db"
    store = SqliteVecStore(str(path), "ns-erase", 5)
    secret = memory("key:1", "my bank pin is 9173-secret", 7)
    kept = memory("key:1", "a kept memory", 8)

    def files() -> bytes:
        return b"".join(p.read_bytes() for p in Path(tmp_path).glob("memories.db*"))

    async def work():
        await store.add([secret, kept])
        before = files()
        assert await store.delete("key:1", secret.id)
        rowids = store._connection.execute(f'select count(*) from "{store.vectors}"').fetchone()[0]
        return before, rowids, await store.search("key:1", secret.vector, 5)

    before, rowids, hits = run(work())
    after = files()
    assert b"9173-secret" in before and packed(secret.vector) in before
    assert rowids == 1 and [h.record.text for h in hits] == ["a kept memory"]
    assert b"9173-secret" not in after and packed(secret.vector) not in after
    assert packed(kept.vector) in after
    run(store.close())


def test_postgresql_forgetting_vacuums_the_rows_and_their_index_entries(postgres):
    store = PgVectorStore(postgres.url, "ns-erase-pg", 5)
    memories = [memory("key:1", f"m{n}", n) for n in range(20)]
    run(store.add(memories))

    def dead_tuples() -> tuple[int, int]:
        row = postgres.sql("kaos", "select n_dead_tup, vacuum_count from pg_stat_user_tables where relname = %s",
                           store.table)
        return row[0] if row else (-1, -1)

    vacuums_before = dead_tuples()[1]
    assert run(store.delete("key:1", memories[0].id))
    assert run(store.delete_all("key:1")) == 19
    # VACUUM removes a dead tuple's index entries (HNSW and b-tree) before the tuple itself: none left.
    wait_until(lambda: dead_tuples()[0] == 0 and dead_tuples()[1] >= vacuums_before + 2, 10,
               what="the table vacuumed, no dead tuple left")
    assert postgres.sql("kaos", f'select count(*) from "{store.table}"') == [(0,)]
    run(store.close())


def test_an_unreachable_postgresql_is_store_unavailable_without_the_password():
    store = PgVectorStore("postgresql://kaos:hunter2@127.0.0.1:1/kaos", "x", 1)
    with pytest.raises(StoreUnavailable) as raised:
        run(store.ping())
    assert "hunter2" not in str(raised.value) and "kaos:***@127.0.0.1:1" in str(raised.value)


def test_a_sqlite_path_that_is_no_file_is_store_unavailable():
    with pytest.raises(StoreUnavailable, match="sqlite store /: "):
        run(create_store("sqlite:///", "x", 1).ping())


def test_sqlite_a_dimension_no_multiple_of_8_is_searched_exactly_and_erased(tmp_path):
    store = SqliteVecStore(str(tmp_path / "odd.db"), "odd", 5)
    near, far = NewMemory("key:1", "near", [1.0, 0.1, 0.0], 1.0), NewMemory("key:1", "far", [0.0, 0.0, 1.0], 1.0)

    async def work():
        await store.add([near, far])
        hits = await store.search("key:1", [1.0, 0.0, 0.0], 2)
        assert await store.delete("key:1", near.id)
        return hits, await store.search("key:1", [1.0, 0.0, 0.0], 2)

    hits, after = run(work())
    assert not store._coarse and [h.record.text for h in hits] == ["near", "far"]
    assert [h.record.text for h in after] == ["far"]
    assert packed(near.vector) not in b"".join(p.read_bytes() for p in tmp_path.glob("odd.db*"))
    run(store.close())


def test_sqlite_a_search_is_one_statement_over_a_few_one_bit_candidates(tmp_path):
    """sqlite-vec picks each chunk's ``k`` nearest in ``k`` passes over it, so the candidate count
    of the one-bit scan is what a search costs (at 100k memories 100 candidates took about 12 ms
    of CPU, 30 about 6): 30 for 5 asked, 6 per memory asked beyond that; the scan and the exact
    ranking are one statement, and the file is read through mmap."""
    store = SqliteVecStore(str(tmp_path / "few.db"), "few", 5)
    run(store.add([memory("key:1", f"m{n}", n) for n in range(80)]))
    statements = []

    def traced(cursor, sql, bindings):
        statements.append((sql, bindings))
        return True

    store._connection.exec_trace = traced
    five, twenty = run(store.search("key:1", unit(3), 5)), run(store.search("key:1", unit(3), 20))
    assert five[0].record.text == twenty[0].record.text == "m3" and (len(five), len(twenty)) == (5, 20)
    assert len(statements) == 2 and all("coarse match" in sql for sql, _ in statements)
    assert statements[0][1][1] == COARSE_CANDIDATES == 30 and statements[1][1][1] == 120
    store._connection.exec_trace = None
    assert store._connection.execute("pragma mmap_size").fetchone()[0] == MMAP_BYTES
    run(store.close())


def test_sqlite_the_one_bit_scan_keeps_the_exact_nearest(tmp_path):
    """The one-bit scan only chooses candidates; the exact cosine ranks them: on 1,500 memories of
    384 dimensions in 60 topics, a question near a topic gets (nearly) the exact top 5."""
    rng, dimension = random.Random(28), 384

    def normal(vector):
        norm = math.sqrt(sum(x * x for x in vector))
        return [x / norm for x in vector]

    topics = [[rng.gauss(0, 1) for _ in range(dimension)] for _ in range(60)]
    vectors = [normal([x + rng.gauss(0, 1.2) for x in topics[n % 60]]) for n in range(1500)]
    questions = [normal([x + rng.gauss(0, 1.2) for x in topics[n]]) for n in range(20)]
    store = SqliteVecStore(str(tmp_path / "topics.db"), "topics", 5)
    run(store.add([NewMemory("key:1", str(n), vector, 1.0) for n, vector in enumerate(vectors)]))
    found = 0
    for question in questions:
        exact = sorted(range(1500), key=lambda n: -sum(a * b for a, b in zip(vectors[n], question)))[:5]
        found += len({int(h.record.text) for h in run(store.search("key:1", question, 5))} & set(exact))
    assert found / (5 * len(questions)) >= 0.95
    run(store.close())


def test_sqlite_an_agent_process_opening_the_store_loads_no_numpy(tmp_path):
    """sqlite-vec's package imports the standard sqlite3 module and numpy (about 20 MiB of an
    agent's RSS, against the 100 MiB target) for helpers the store does not use: the store loads
    the extension by its path, and a process that opens, writes and searches imports neither."""
    script = (
        "import asyncio, sys\n"
        "from kaos_runtime.long_term.records import NewMemory\n"
        "from kaos_runtime.long_term.sqlite_store import SqliteVecStore\n"
        f"store = SqliteVecStore({str(tmp_path / 'lean.db')!r}, 'lean', 5)\n"
        "vector = [1.0] + [0.0] * 383\n"
        "asyncio.run(store.add([NewMemory('key:1', 'fact', vector, 1000.0)]))\n"
        "assert asyncio.run(store.search('key:1', vector, 1))[0].record.text == 'fact'\n"
        "print(sorted(name for name in ('numpy', 'sqlite3', 'sqlite_vec') if name in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]", result.stdout

"""Long-term memory, measured: retrieval quality, retrieval latency at 1k, 10k and 100k memories on
both stores, ingest throughput, and an agent's RSS with long-term memory on.

    python benchmarks/long_term_bench.py [--sizes 1000,10000,100000] [--queries 200]
                                         [--backends sqlite,postgresql] [--no-rss] [--generate]
    python benchmarks/long_term_bench.py --rss-only   # the agent's RSS alone, with and without long-term memory

The data set is synthetic and shipped beside this script (benchmarks/long_term_data.json;
``--generate`` writes it again, the same from the same seed): facts about a user and the people
around them ("My sister's favourite colour is green."), each with a question worded otherwise
("Which colour does my sister like best?"), and plain sentences as distractors. Everything runs
on 127.0.0.1: the offline embedder (engines/embeddings_server.py, all-MiniLM-L6-v2), a SQLite
file with sqlite-vec, and PostgreSQL with pgvector (pgserver's binaries, as the tests).

- recall@5: the facts and the distractors embedded and stored for one owner; for each question,
  whether its fact is among the 5 nearest (target >= 0.9);
- retrieval p50/p99 (k=5, one owner holding all the memories, the worst case): the store filled
  to each size with the real vectors plus random unit vectors (embedding 100k sentences with the
  offline embedder would take the better part of an hour on 2 cores; the store's search cost does
  not depend on what the vectors mean), then ``--queries`` question vectors (target p99 <= 50 ms at
  100k), and for SQLite, whose search is approximate (a one-bit scan, then exact cosine), how many
  of the exact 5 nearest (by cosine over every row) it returns for 20 questions at each size;
- ingest: memories per second into each store (batches of 500, the filler), and through the
  embedder (embed + store, the real facts, as ``learn`` does);
- RSS of an agent with long-term memory on (SQLite store, the embedder apart) after 50 turns,
  beside the same agent without long-term memory (both on scripted replies). The agents run the
  ``kaos_runtime`` that ``PYTHONPATH`` names, so another checkout's runtime is measured with
  ``PYTHONPATH=<checkout>/runtime``.

``--mem0`` also runs mem0 (``mem0ai``) on the same data, with the same embedder and the same
PostgreSQL (benchmarks/mem0_bench.py, in the Python of a separate venv that has mem0ai; the flag
says how to make one), and prints its figures after KAOS's: ``Memory.add(..., infer=False)``, so
that no LLM extracts facts, its pgvector store, its telemetry off. Not a test: it prints figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

import httpx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "runtime"))
sys.path.insert(0, os.path.join(ROOT, "operator"))

from benchmarks.runtime_bench import percentile, rss_mib  # noqa: E402
from benchmarks.services import start_agent  # noqa: E402
from benchmarks.unit_vectors import unit  # noqa: E402
from kaos_runtime.long_term import create_store  # noqa: E402
from kaos_runtime.long_term.embedder import Embedder  # noqa: E402
from kaos_runtime.long_term.records import NewMemory  # noqa: E402
from tests.support.postgres_server import PostgresServer  # noqa: E402
from tests.support.processes import spawn, wait_until_ok  # noqa: E402

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "long_term_data.json")
OWNER = "key:1"
SEED = 28

SUBJECTS = [("I", "my", "do I", "am I"), ("my sister", "my sister's", "does my sister", "is my sister"),
            ("my brother", "my brother's", "does my brother", "is my brother"),
            ("my boss", "my boss's", "does my boss", "is my boss")]
# (fact template, question template, values): {s} subject, {p} possessive, {d} "do I"/"does X", {b} "am I"/"is X".
ATTRIBUTES = [
    ("{P} favourite colour is {v}.", "Which colour {d} like best?", ["teal", "green", "crimson", "yellow"]),
    ("{P} home town is {v}.", "Where {d} come from originally?", ["Porto", "Leeds", "Graz", "Turin"]),
    ("{P} dog is called {v}.", "What is the name of {p} dog?", ["Biscuit", "Rex", "Luna", "Pepper"]),
    ("{P} job is {v}.", "What {d} do for a living?", ["nursing", "accounting", "carpentry", "teaching"]),
    ("{P} favourite sport is {v}.", "Which sport {d} enjoy most?", ["tennis", "rowing", "cricket", "judo"]),
    ("{P} car is a {v}.", "What car {d} drive?", ["Volvo", "Fiat", "Toyota", "Renault"]),
    ("{P} favourite food is {v}.", "What {d} love to eat?", ["sushi", "lasagne", "curry", "paella"]),
    ("{P} birthday is in {v}.", "When is {p} birthday?", ["March", "July", "October", "January"]),
    ("{P} instrument is the {v}.", "Which instrument {d} play?", ["cello", "piano", "trumpet", "violin"]),
    ("{P} allergy is to {v}.", "What {b} allergic to?", ["peanuts", "pollen", "penicillin", "cats"]),
    ("{P} favourite book is {v}.", "Which book {d} like most?", ["Dune", "Emma", "Ulysses", "Beloved"]),
    ("{P} phone is an {v}.", "What phone {d} use?", ["iPhone", "Android", "old Nokia", "Pixel"]),
    ("{P} favourite season is {v}.", "Which time of year {d} prefer?", ["autumn", "spring", "winter", "summer"]),
    ("{P} coffee order is a {v}.", "How {d} take coffee?", ["flat white", "espresso", "latte", "cortado"]),
    ("{P} native language is {v}.", "What language {d} speak at home?", ["Polish", "Greek", "Welsh", "Dutch"]),
    ("{P} favourite film is {v}.", "Which movie {d} love?", ["Alien", "Amelie", "Heat", "Up"]),
    ("{P} gym day is {v}.", "On which day {d} go to the gym?", ["Monday", "Wednesday", "Friday", "Sunday"]),
    ("{P} shoe size is {v}.", "What size shoes {d} wear?", ["42", "38", "45", "40"]),
    ("{P} favourite holiday spot is {v}.", "Where {d} like to go on holiday?", ["Crete", "Iceland", "Kyoto", "Lima"]),
    ("{P} blood type is {v}.", "What blood type {d} have?", ["O negative", "A positive", "B positive", "AB"]),
    ("{P} team is {v}.", "Which football team {d} support?", ["Arsenal", "Benfica", "Ajax", "Celtic"]),
    ("{P} flat is in {v}.", "Which part of town {d} live in?", ["Camden", "Alfama", "Kreuzberg", "Brera"]),
    ("{P} hobby is {v}.", "What {d} do in spare time?", ["pottery", "birdwatching", "chess", "climbing"]),
    ("{P} favourite drink is {v}.", "What {d} like to drink?", ["ginger beer", "mint tea", "cola", "kefir"]),
    ("{P} bank is {v}.", "Which bank {d} use?", ["Monzo", "Barclays", "ING", "Revolut"]),
]
DISTRACTOR_PARTS = (["The train", "The meeting", "The report", "The weather", "The printer", "The garden", "The market",
                     "The concert", "The bridge", "The museum"],
                    ["was delayed", "looked fine", "got cancelled", "changed again", "was crowded", "felt quiet",
                     "started late", "ran smoothly", "needed repairs", "drew a crowd"],
                    ["this morning.", "on Tuesday.", "last week.", "in the rain.", "after lunch.", "at noon.",
                     "before the holidays.", "downtown.", "near the station.", "for hours."])


def generate() -> dict:
    rng = random.Random(SEED)
    facts = []
    for fact, question, values in ATTRIBUTES:
        shuffled = values[:]
        rng.shuffle(shuffled)
        for (subject, possessive, do, be), value in zip(SUBJECTS, shuffled):
            facts.append({"fact": fact.format(P=possessive.capitalize(), v=value),
                          "question": question.format(d=do, p=possessive, b=be).replace("{v}", value)})
    distractors = sorted({f"{a} {b} {c}" for a in DISTRACTOR_PARTS[0] for b in DISTRACTOR_PARTS[1]
                          for c in DISTRACTOR_PARTS[2]})
    rng.shuffle(distractors)
    return {"seed": SEED, "facts": facts, "distractors": distractors[:1000 - len(facts)]}


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


async def recall_at_5(store, embedder: Embedder, data: dict) -> tuple[float, float, list[list[float]]]:
    texts = [f["fact"] for f in data["facts"]] + data["distractors"]
    started = time.perf_counter()
    vectors = await embedder.embed(texts)
    memories = [NewMemory(OWNER, text, vector, 1.0) for text, vector in zip(texts, vectors)]
    await store.add(memories)
    ingest = len(texts) / (time.perf_counter() - started)
    questions = await embedder.embed([f["question"] for f in data["facts"]])
    found = 0
    for fact, vector in zip(data["facts"], questions):
        hits = await store.search(OWNER, vector, 5)
        found += any(hit.record.text == fact["fact"] for hit in hits)
    return found / len(data["facts"]), ingest, questions


async def fill_and_time(store, questions: list[list[float]], already: int, size: int, queries: int,
                        rng: random.Random) -> tuple[float, float, float, float]:
    """Fill to ``size`` with random unit vectors; (memories/s of the filling, p50, p99, the CPU
    time's p50: this process's, which a loaded machine changes less than the wall time)."""
    dimension = len(questions[0])
    started, added = time.perf_counter(), 0
    while already + added < size:
        batch = [NewMemory(OWNER, f"filler {already + added + n}", unit(rng, dimension), 1.0)
                 for n in range(min(500, size - already - added))]
        await store.add(batch)
        added += len(batch)
    rate = added / (time.perf_counter() - started) if added else float("nan")
    times, cpu = [], []
    for n in range(queries):
        began, began_cpu = time.perf_counter(), time.process_time()
        await store.search(OWNER, questions[n % len(questions)], 5)
        times.append(time.perf_counter() - began)
        cpu.append(time.process_time() - began_cpu)
    if not times:
        return rate, float("nan"), float("nan"), float("nan")
    return rate, percentile(times, 0.5), percentile(times, 0.99), percentile(cpu, 0.5)


async def exact_overlap(store, questions: list[list[float]], k: int = 5) -> float:
    """The share of the exact ``k`` nearest (cosine over every row of the owner) that the store's
    search returns, over the first 20 questions; SQLite only (it reads the file directly)."""
    from kaos_runtime.long_term.sqlite_store import packed

    found = 0
    for vector in questions[:20]:
        hits = {hit.record.id for hit in await store.search(OWNER, vector, k)}
        exact = store._connection.execute(
            f'select id from "{store.table}" where owner = ? order by vec_distance_cosine(embedding, ?) limit ?',
            (OWNER, packed(vector), k)).fetchall()
        found += len(hits & {row[0] for row in exact})
    return found / (k * len(questions[:20]))


async def bench_store(name: str, store, embedder: Embedder, data: dict, sizes: list[int], queries: int) -> None:
    recall, ingest, questions = await recall_at_5(store, embedder, data)
    print(f"{name}: recall@5 {recall:.3f} over {len(data['facts'])} questions "
          f"({len(data['facts']) + len(data['distractors'])} memories); ingest through the embedder "
          f"{ingest:.0f} memories/s", flush=True)
    rng, held = random.Random(SEED), len(data["facts"]) + len(data["distractors"])
    for size in sizes:
        rebuilt = ""
        if store.backend == "postgresql" and size > held:
            # Bulk loading: the HNSW index is built once after the rows, not updated row by row.
            connection = await store._connect()
            await connection.execute(f'drop index if exists "{store.table}_hnsw"')
            rate, _, _, _ = await fill_and_time(store, questions, held, size, 0, rng)
            began = time.perf_counter()
            await connection.execute("set statement_timeout = 0")  # a build of minutes; searches keep theirs
            await connection.execute(f'create index "{store.table}_hnsw" on "{store.table}" '
                                     'using hnsw (embedding vector_cosine_ops)')
            rebuilt = f", HNSW index built in {time.perf_counter() - began:.1f} s"
            await connection.execute(f"set statement_timeout = {int(store.timeout * 1000)}")
            held = size
        filled, p50, p99, cpu = await fill_and_time(store, questions, held, size, queries, rng)
        rate = rate if rebuilt else filled
        held = max(held, size)
        exact = f"; {await exact_overlap(store, questions):.3f} of the exact top 5" if store.backend == "sqlite" else ""
        print(f"{name}: {size:>7} memories: retrieval p50 {ms(p50)}, p99 {ms(p99)} (CPU p50 {ms(cpu)}){exact}; store ingest "
              f"{rate:.0f} memories/s{rebuilt}", flush=True)
    await store.close()


MEM0_VENV = os.path.expanduser("~/.cache/kaos/bench-mem0-venv")
MEM0_INSTALL = (f"python3 -m venv {MEM0_VENV} && {MEM0_VENV}/bin/pip install mem0ai==2.2.1 'psycopg[binary]' psycopg-pool "
                "(a venv apart: mem0ai is no requirement of KAOS)")


def mem0_python(given: str) -> str:
    """The Python that runs mem0_bench.py: ``--mem0 PYTHON``, or the venv the docstring names."""
    python = given or os.path.join(MEM0_VENV, "bin", "python")
    found = subprocess.run([python, "-c", "import mem0"], capture_output=True).returncode == 0 if os.path.exists(
        python) else False
    if not found:
        sys.exit(f"--mem0: {python} cannot import mem0; make the venv with: {MEM0_INSTALL}")
    return python


def run_mem0(python: str, embedder_url: str, postgres_url: str, folder: str, sizes: list[int], queries: int) -> None:
    """mem0_bench.py in its own venv; its telemetry off, its LLM (and any OpenAI default) at a
    closed port of 127.0.0.1, its files in ``folder``."""
    closed = "http://127.0.0.1:9/v1"
    env = {**os.environ, "MEM0_TELEMETRY": "False", "MEM0_DIR": os.path.join(folder, "mem0"),
           "OPENAI_API_KEY": "dummy", "OPENAI_BASE_URL": closed, "PYTHONPATH": ""}
    subprocess.run([python, os.path.join(ROOT, "benchmarks", "mem0_bench.py"), "--embedder", embedder_url,
                    "--postgres", postgres_url, "--data", DATA, "--folder", folder,
                    "--sizes", ",".join(str(size) for size in sizes), "--queries", str(queries)], env=env, check=True)


def agent_rss(embedder_url: str, folder: str, log_dir: str, long_term: bool = True) -> float:
    """RSS (MiB) of an agent after 50 turns, with long-term memory on (the SQLite store) or off."""
    memory = {"LONG_TERM_MEMORY_ENABLED": "true", "LONG_TERM_MEMORY_STORE_URL": f"sqlite://{folder}/agent.db",
              "LONG_TERM_MEMORY_EMBEDDING_URL": embedder_url,
              "LONG_TERM_MEMORY_EMBEDDING_MODEL": "all-minilm-l6-v2"} if long_term else {}
    agent = start_agent("ltm-rss" if long_term else "no-ltm-rss",
                        {**memory, "DEBUG_MOCK_RESPONSES": json.dumps(["Noted."] * 60)}, log_dir)
    try:
        with httpx.Client(timeout=60) as client:
            for n in range(50):
                client.post(agent.url + "/v1/chat/completions", json={
                    "model": "x", "messages": [{"role": "user", "content": f"My locker number is {n}. Thanks."}]})
        return rss_mib(agent.process.pid)
    finally:
        agent.stop()


def print_rss(embedder_url: str, folder: str) -> None:
    without = agent_rss(embedder_url, folder, folder, long_term=False)
    with_memory = agent_rss(embedder_url, folder, folder)
    print(f"agent RSS after 50 turns: {with_memory:.1f} MiB with long-term memory on (target <= 100), "
          f"{without:.1f} MiB without", flush=True)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--no-rss", action="store_true", help="skip the agent RSS measurement")
    parser.add_argument("--rss-only", action="store_true", help="only the agent RSS, with and without long-term memory")
    parser.add_argument("--generate", action="store_true", help="write benchmarks/long_term_data.json again")
    parser.add_argument("--mem0", nargs="?", const="", default=None, metavar="PYTHON",
                        help=f"also run mem0 on the same data (PYTHON: one that imports mem0; default {MEM0_VENV})")
    parser.add_argument("--mem0-sizes", help="the sizes for mem0 (default: --sizes)")
    args = parser.parse_args()
    python = mem0_python(args.mem0) if args.mem0 is not None else None
    if args.generate or not os.path.exists(DATA):
        with open(DATA, "w") as handle:
            json.dump(generate(), handle, indent=1)
            handle.write("\n")
    with open(DATA) as handle:
        data = json.load(handle)
    sizes = [int(size) for size in args.sizes.split(",")]
    folder = tempfile.mkdtemp(prefix="kaos-ltm-bench-")
    embedder_service = spawn("embedder", ["-m", "kaos_runtime.engines.embeddings_server"], {}, folder)
    wait_until_ok(embedder_service, timeout=120)
    embedder = Embedder(embedder_service.url, "all-minilm-l6-v2", "", 120)
    postgres = None
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    try:
        for backend in [] if args.rss_only else args.backends.split(","):
            if backend == "sqlite":
                store = create_store(f"sqlite://{folder}/bench.db", "bench", 30)
            else:
                postgres = PostgresServer().start()
                store = create_store(postgres.url, "bench", 30)
            await bench_store(backend, store, embedder, data, sizes, args.queries)
        if python is not None:
            postgres = postgres or PostgresServer().start()
            mem0_sizes = [int(size) for size in (args.mem0_sizes or args.sizes).split(",")]
            run_mem0(python, embedder_service.url, postgres.url, folder, mem0_sizes, args.queries)
        if args.rss_only or not args.no_rss:
            print_rss(embedder_service.url, folder)
    finally:
        await embedder.close()
        embedder_service.stop()
        print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
        if postgres is not None:
            postgres.remove()
        shutil.rmtree(folder, ignore_errors=True)  # the SQLite file of 100k memories is 220 MB


if __name__ == "__main__":
    asyncio.run(main())

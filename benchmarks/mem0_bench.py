"""mem0 (``mem0ai``) on the long-term memory benchmark's data, with KAOS's offline embedder and the
same PostgreSQL + pgvector: recall@5, search p50/p99 at each size, ingest.

Run by long_term_bench.py ``--mem0`` with the Python of a separate venv that has mem0ai (it is not
a requirement of KAOS, and CI does not install it):

    python3 -m venv ~/.cache/kaos/bench-mem0-venv
    ~/.cache/kaos/bench-mem0-venv/bin/pip install mem0ai 'psycopg[binary]' psycopg-pool

It imports nothing of KAOS. mem0 is configured to stay on 127.0.0.1: its OpenAI embedder at the
embeddings server's ``/v1`` (key "dummy"), its LLM at a closed port of 127.0.0.1 (``add`` with
``infer=False`` and ``search`` must not call it; a call would fail the run), its pgvector store on
the benchmark's PostgreSQL, its history in a SQLite file in ``--folder``, and its telemetry off
(``MEM0_TELEMETRY=False``, read when mem0 is imported; the caller sets it in the environment).

- recall@5 and ingest through the embedder: each of the 1,000 sentences through
  ``Memory.add(text, user_id=..., infer=False)`` (one embedding request and one insert per memory,
  as mem0 does), then ``Memory.search(question, filters={"user_id": ...}, top_k=5)``;
- search p50/p99: the store filled to each size with the same random unit vectors as KAOS's
  (``vector_store.insert``, batches of 500, the payload ``Memory.add`` writes), then ``--queries``
  searches through ``Memory.search``, the question's vector served from a cache so that, as in
  KAOS's figures, the embedding request is not timed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sys
import time
import uuid
from datetime import datetime, timezone

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.unit_vectors import unit  # noqa: E402

OWNER = "key:1"
SEED = 28
CLOSED_PORT_URL = "http://127.0.0.1:9/v1"  # the discard port: nothing listens, a call fails at once


def config(embedder_url: str, postgres_url: str, folder: str) -> dict:
    return {
        "embedder": {"provider": "openai", "config": {
            "model": "all-minilm-l6-v2", "embedding_dims": 384, "api_key": "dummy",
            "openai_base_url": embedder_url.rstrip("/") + "/v1"}},
        "llm": {"provider": "openai", "config": {"model": "none", "api_key": "dummy",
                                                 "openai_base_url": CLOSED_PORT_URL}},
        "vector_store": {"provider": "pgvector", "config": {
            "connection_string": postgres_url, "collection_name": "mem0_bench", "embedding_model_dims": 384}},
        "history_db_path": os.path.join(folder, "mem0-history.db"),
    }


class CachedQueries:
    """mem0's embedder with the questions' vectors computed once: a search then times mem0's own
    work (BM25 and vector queries, scoring), not the embedding request."""

    def __init__(self, embedder, questions: list[str]):
        self.embedder = embedder
        self.vectors = dict(zip(questions, embedder.embed_batch(questions, "search")))

    def embed(self, text, memory_action=None):
        if text in self.vectors:
            return self.vectors[text]
        return self.embedder.embed(text, memory_action)

    def embed_batch(self, texts, memory_action="add"):
        return self.embedder.embed_batch(texts, memory_action)


def percentile(values: list[float], share: float) -> float:
    """As runtime_bench.percentile, which this venv cannot import (it imports KAOS)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def filler(memory, rng: random.Random, start: int, count: int) -> None:
    now = datetime.now(timezone.utc).isoformat()
    for first in range(start, start + count, 500):
        numbers = range(first, min(first + 500, start + count))
        payloads = [{"data": f"filler {n}", "hash": hashlib.md5(f"filler {n}".encode()).hexdigest(), "user_id": OWNER,
                     "role": "user", "created_at": now, "updated_at": now, "text_lemmatized": f"filler {n}"}
                    for n in numbers]
        memory.vector_store.insert(vectors=[unit(rng, 384) for _ in numbers], payloads=payloads,
                                   ids=[str(uuid.uuid4()) for _ in numbers])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--embedder", required=True)
    parser.add_argument("--postgres", required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--folder", required=True)
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    if os.environ.get("MEM0_TELEMETRY", "").lower() not in ("false", "0", "no"):
        sys.exit("mem0_bench: set MEM0_TELEMETRY=False (mem0 reads it at import) so that nothing leaves 127.0.0.1")
    from mem0 import Memory

    with open(args.data) as handle:
        data = json.load(handle)
    memory = Memory.from_config(config(args.embedder, args.postgres, args.folder))
    texts = [f["fact"] for f in data["facts"]] + data["distractors"]
    started = time.perf_counter()
    for text in texts:
        memory.add(text, user_id=OWNER, infer=False)
    ingest = len(texts) / (time.perf_counter() - started)
    questions = [f["question"] for f in data["facts"]]
    memory.embedding_model = CachedQueries(memory.embedding_model, questions)
    found = 0
    for fact in data["facts"]:
        hits = memory.search(fact["question"], filters={"user_id": OWNER}, top_k=5)["results"]
        found += any(hit["memory"] == fact["fact"] for hit in hits)
    print(f"mem0: recall@5 {found / len(data['facts']):.3f} over {len(data['facts'])} questions ({len(texts)} "
          f"memories); ingest through the embedder (Memory.add, infer=False) {ingest:.0f} memories/s", flush=True)
    rng, held = random.Random(SEED), len(texts)
    for size in [int(size) for size in args.sizes.split(",")]:
        began = time.perf_counter()
        filler(memory, rng, held, max(0, size - held))
        rate = (size - held) / (time.perf_counter() - began) if size > held else float("nan")
        held = max(held, size)
        times, cpu = [], []
        for n in range(args.queries):
            wall, process = time.perf_counter(), time.process_time()
            memory.search(questions[n % len(questions)], filters={"user_id": OWNER}, top_k=5)
            times.append(time.perf_counter() - wall)
            cpu.append(time.process_time() - process)
        print(f"mem0: {size:>7} memories: search p50 {percentile(times, 0.5) * 1000:.2f} ms, p99 "
              f"{percentile(times, 0.99) * 1000:.2f} ms (CPU p50 {percentile(cpu, 0.5) * 1000:.2f} ms); store ingest "
              f"{rate:.0f} memories/s (HNSW kept up to date row by row, mem0's default)", flush=True)


if __name__ == "__main__":
    main()

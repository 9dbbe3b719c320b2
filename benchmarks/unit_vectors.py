"""Random unit vectors: the filler of the long-term memory benchmark, the same from the same seed
for KAOS's stores (long_term_bench.py) and for mem0 (mem0_bench.py)."""

from __future__ import annotations

import math
import random


def unit(rng: random.Random, dimension: int) -> list[float]:
    vector = [rng.gauss(0, 1) for _ in range(dimension)]
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector]

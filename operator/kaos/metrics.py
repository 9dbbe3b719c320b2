"""Reconcile metrics of a control plane (the operator, and the local control plane of `kaos up`).

One registry per process: ``kaos_reconcile_total{kind, result}`` (result: the phase written,
Ready | Waiting | Pending | Failed; a reconcile that raised is not counted) and
``kaos_reconcile_duration_seconds{kind}``. The operator serves them on
``KAOS_METRICS_PORT`` (``/metrics``); ``kaos up`` at ``/_kaos/metrics`` of its gateway.
"""

from __future__ import annotations

import time

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

CONTENT_TYPE = CONTENT_TYPE_LATEST
REGISTRY = CollectorRegistry(auto_describe=False)
RECONCILES = Counter("kaos_reconcile", "Reconciles of a resource, by kind and the phase they wrote.",
                     ["kind", "result"], registry=REGISTRY)
DURATION = Histogram("kaos_reconcile_duration_seconds", "Time one reconcile took (helm included), by kind.",
                     ["kind"], registry=REGISTRY,
                     buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120))


def started() -> float:
    return time.perf_counter()


def reconciled(kind: str, phase: str, since: float) -> None:
    """Count one reconcile of a ``kind`` that wrote ``phase`` and took from ``since`` (``started()``) to now."""
    DURATION.labels(kind).observe(time.perf_counter() - since)
    RECONCILES.labels(kind, phase).inc()


def exposition() -> bytes:
    return generate_latest(REGISTRY)

"""How long KAOS resources were not Ready during an operation (a platform upgrade): a thread
lists them, and their Deployments, every tenth of a second and records for each the spans it
was not Ready for its current generation, and for each Deployment the spans it was rolling out.

While a CRD changes, the apiserver answers 429 for its resources until their storage is ready
again: such a sample is left out, and the longest time without an answer (``blind``) is kept,
since a span that began and ended within it was not seen."""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from typing import Any, Mapping

from kaos.api import API_VERSION, PLURALS
from kaos.reconcile.refs import release_name
from tests.cluster.controlplane import ControlPlane

INTERVAL = 0.1


def is_ready(item: Mapping[str, Any]) -> bool:
    """Ready for the generation it has now (what the Argo CD health check calls Healthy)."""
    status = item.get("status") or {}
    return (status.get("phase") == "Ready" and bool(status.get("ready"))
            and status.get("observedGeneration") == (item.get("metadata") or {}).get("generation"))


def is_rolled_out(deployment: Mapping[str, Any]) -> bool:
    """Every replica of the Deployment's current template is updated and available."""
    status = deployment.get("status") or {}
    wanted = (deployment.get("spec") or {}).get("replicas", 1)
    return (status.get("observedGeneration", 0) >= deployment["metadata"].get("generation", 0)
            and status.get("updatedReplicas", 0) == wanted and status.get("availableReplicas", 0) == wanted
            and status.get("replicas", 0) == wanted)


class Spans:
    """Per key, the spans (seconds) during which a condition did not hold."""

    def __init__(self) -> None:
        self.since: dict[tuple, float] = {}
        self.closed: dict[tuple, list[float]] = defaultdict(list)
        self.seen: set[tuple] = set()

    def observe(self, key: tuple, holds: bool, now: float) -> None:
        self.seen.add(key)
        if not holds:
            self.since.setdefault(key, now)
        elif key in self.since:
            self.closed[key].append(now - self.since.pop(key))

    def close(self, now: float) -> None:
        for key in list(self.since):
            self.closed[key].append(now - self.since.pop(key))

    def longest(self) -> dict[tuple, float]:
        """Every key seen: its longest span (0.0 when the condition always held)."""
        return {key: max(self.closed.get(key) or [0.0]) for key in sorted(self.seen)}


class Unserved(Exception):
    """The apiserver answered 429: the resources' storage is (re)initializing."""


class ReadinessWatch:
    """``with ReadinessWatch(plane, namespace, kinds) as watch: <the upgrade>``; then
    ``watch.unready.longest()`` per (kind, name) and ``watch.rollouts.longest()`` per Deployment."""

    def __init__(self, plane: ControlPlane, namespace: str, kinds: tuple[str, ...]) -> None:
        self.plane, self.namespace, self.kinds = plane, namespace, kinds
        self.unready, self.rollouts = Spans(), Spans()
        self.generations: dict[str, set[int]] = defaultdict(set)  # Deployment -> generations seen
        self.samples = 0
        self.blind = 0.0
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="readiness-watch", daemon=True)

    def __enter__(self) -> "ReadinessWatch":
        self._client = self.plane.client()
        self._last = time.monotonic()
        self._sample()  # the state before the operation, before it returns
        self._thread.start()
        return self

    def __exit__(self, *_) -> None:
        self._stop.set()
        self._thread.join(10)
        self._run_once()
        self._client.close()
        now = time.monotonic()
        self.unready.close(now)
        self.rollouts.close(now)

    def _run(self) -> None:
        while not self._stop.wait(INTERVAL):
            self._run_once()

    def _run_once(self) -> None:
        try:
            self._sample()
        except Unserved:
            pass
        except Exception as error:  # anything else: reported by the test, and the next sample goes on
            self.errors.append(f"{type(error).__name__}: {error}")
        self.blind = max(self.blind, time.monotonic() - self._last)

    def _list(self, path: str) -> list[dict]:
        response = self._client.get(path)
        if response.status_code == 429:
            raise Unserved(path)
        response.raise_for_status()
        return response.json().get("items") or []

    def _sample(self) -> None:
        listed = {kind: self._list(f"/apis/{API_VERSION}/namespaces/{self.namespace}/{PLURALS[kind]}")
                  for kind in self.kinds}
        deployments = self._list(f"/apis/apps/v1/namespaces/{self.namespace}/deployments")
        now = self._last = time.monotonic()
        for kind, items in listed.items():
            for item in items:
                self.unready.observe((kind, item["metadata"]["name"]), is_ready(item), now)
        for item in deployments:
            name = item["metadata"]["name"]
            self.generations[name].add(item["metadata"].get("generation", 0))
            self.rollouts.observe((name,), is_rolled_out(item), now)
        self.samples += 1

    @staticmethod
    def deployment_of(kind: str, name: str) -> str:
        return release_name(kind, name)

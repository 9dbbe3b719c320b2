"""What the operator knows of the cluster: kopf's in-memory indices of the three workload kinds,
of MemoryStores (what Agents name) and of the Deployments the workload charts create."""

from __future__ import annotations

import copy
from typing import Any, Mapping

from kaos.api import AGENT, KIND_OF_CHART, MCPSERVER, MEMORYSTORE, MODELAPI, namespace_of, resource_label
from kaos.reconcile import Ref

PART_OF_LABEL = "app.kubernetes.io/part-of"
CHART_LABEL = "app.kubernetes.io/name"


def plain(body: Mapping[str, Any]) -> dict[str, Any]:
    """A detached plain-dict copy of a kopf body (kopf's views follow the live object)."""
    return copy.deepcopy({key: body[key] for key in body})


# What the indices keep of a resource's metadata: what plans and fingerprints read. Not its
# managedFields nor kopf's annotations (a copy of the spec), the larger part of a stored body.
KEPT_METADATA = ("name", "namespace", "uid", "generation", "resourceVersion", "deletionTimestamp", "labels")


def indexed(body: Mapping[str, Any]) -> dict[str, Any]:
    """The detached copy of a resource the indices keep (kaos.operator.handlers)."""
    metadata = body.get("metadata") or {}
    kept = {key: copy.deepcopy(metadata[key]) for key in KEPT_METADATA if key in metadata}
    return {**{key: copy.deepcopy(body[key]) for key in body if key != "metadata"}, "metadata": kept}


def deployment_key(body: Mapping[str, Any]) -> Ref | None:
    """The KAOS resource a Deployment belongs to, from the labels the workload charts set."""
    metadata = body.get("metadata") or {}
    labels = metadata.get("labels") or {}
    chart = labels.get(CHART_LABEL)
    kind = KIND_OF_CHART.get(chart)
    name = labels.get(resource_label(chart)) if chart else None
    if kind is None or not name:
        return None
    return Ref(kind, namespace_of(metadata), name)


def replica_counts(body: Mapping[str, Any]) -> tuple[int, int]:
    """(readyReplicas, replicas) from a Deployment's status."""
    status = body.get("status") or {}
    return int(status.get("readyReplicas") or 0), int(status.get("replicas") or 0)


class World:
    """Read access to kopf's indices, keyed by Ref."""

    def __init__(self, agents, modelapis, mcpservers, deployments, memorystores=None):
        self._by_kind = {AGENT: agents, MODELAPI: modelapis, MCPSERVER: mcpservers, MEMORYSTORE: memorystores}
        self._deployments = deployments

    @classmethod
    def of(cls, kwargs: Mapping[str, Any]) -> "World":
        """The indices kopf passes every handler (the kwargs), as a World."""
        return cls(kwargs["agent_index"], kwargs["modelapi_index"], kwargs["mcpserver_index"],
                   kwargs["deployment_index"], kwargs.get("memorystore_index"))

    @staticmethod
    def _one(index, key):
        store = index.get(key) if index is not None else None
        return next(iter(store), None) if store else None

    def get(self, ref: Ref) -> dict[str, Any] | None:
        """The resource as last seen, or None when it does not exist (or is being deleted)."""
        found = self._one(self._by_kind.get(ref.kind), ref)
        if found is None or (found.get("metadata") or {}).get("deletionTimestamp"):
            return None
        return found

    def replicas(self, ref: Ref) -> tuple[int | None, int | None]:
        """(readyReplicas, replicas) of the resource's Deployment; (None, None) when not seen."""
        counts = self._one(self._deployments, ref)
        return counts if counts is not None else (None, None)

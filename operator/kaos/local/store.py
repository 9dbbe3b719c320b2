"""The resource store of `kaos up`: what the API server and etcd are in a cluster.

It validates manifests with the CRD schemas (defaults applied), keeps the KAOS resources and
the Secrets and ConfigMaps they read, and tells its watchers of every apply and delete, in
order. It runs nothing: the reconcile loop watches it and writes each resource's status.
"""

from __future__ import annotations

import copy
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from kaos import crds
from kaos.api import SERVED_KINDS
from kaos.local.manifests import CORE_KINDS, ApplyError, apply_order
from kaos.reconcile import Ref

# Told of each stored change: (ref, the stored document), or (ref, None) when it was deleted.
Watcher = Callable[[Ref, "dict | None"], None]


def validate_documents(documents: list[tuple[dict, str]], crd_dir: Path) -> list[tuple[dict, str]]:
    """Validate every document first (so that a bad file applies nothing), in apply order."""
    validated, problems = [], []
    for document, source in documents:
        try:
            validated.append((validate_document(document, crd_dir), source))
        except ValueError as error:
            problems.append(f"{source}: {error}")
    if problems:
        raise ApplyError("\n".join(problems))
    return sorted(validated, key=lambda item: apply_order(item[0]["kind"]))


def validate_document(document: dict, crd_dir: Path) -> dict:
    if not isinstance(document, dict):
        raise ValueError("a manifest must be a mapping")
    kind = document.get("kind")
    metadata = document.get("metadata") if isinstance(document.get("metadata"), dict) else {}
    if kind in CORE_KINDS:
        if document.get("apiVersion") != "v1" or not metadata.get("name"):
            raise ValueError(f"{kind}: needs apiVersion v1 and metadata.name")
        return copy.deepcopy(document)
    if kind not in SERVED_KINDS:
        raise ValueError(
            f"kind {kind!r} is not supported by `kaos up` (supported: {', '.join((*SERVED_KINDS, *CORE_KINDS))})"
        )
    return crds.validate(document, crd_dir)


class ResourceStore:
    def __init__(self, crd_dir: Path):
        self.crd_dir = crd_dir
        self.resources: dict[Ref, dict] = {}
        self.sources: dict[Ref, str] = {}
        self.objects: dict[str, dict[tuple[str, str], dict]] = {}  # namespace -> (kind, name) -> Secret/ConfigMap
        self.watchers: list[Watcher] = []

    def watch(self, watcher: Watcher) -> None:
        self.watchers.append(watcher)

    def _tell(self, ref: Ref, document: dict | None) -> None:
        for watcher in self.watchers:
            watcher(ref, document)

    def apply(self, documents: list[tuple[dict, str]]) -> list[dict]:
        """Store validated documents (all or none); returns what changed. A resource whose spec
        changed gets the next generation and keeps its status; an unchanged one is kept as is."""
        results = []
        for document, source in validate_documents(documents, self.crd_dir):
            metadata = document.setdefault("metadata", {})
            namespace = metadata.setdefault("namespace", "default")
            kind, name = document["kind"], metadata["name"]
            ref = Ref(kind, namespace, name)
            if kind in CORE_KINDS:
                self.objects.setdefault(namespace, {})[(kind, name)] = document
                results.append({"kind": kind, "namespace": namespace, "name": name, "result": "configured"})
                self._tell(ref, document)
                continue
            old = self.resources.get(ref)
            document.pop("status", None)
            if old is None:
                metadata["generation"] = 1
                metadata["creationTimestamp"] = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
                outcome = "created"
            elif old.get("spec") != document.get("spec"):
                metadata["generation"] = old["metadata"].get("generation", 1) + 1
                metadata["creationTimestamp"] = old["metadata"].get("creationTimestamp")
                document["status"] = old.get("status", {})
                outcome = "configured"
            else:
                document = old
                outcome = "unchanged"
            self.resources[ref] = document
            self.sources[ref] = source
            results.append({"kind": kind, "namespace": namespace, "name": name, "result": outcome})
            self._tell(ref, document)
        return results

    def delete(self, ref: Ref) -> bool:
        if ref.kind in CORE_KINDS:
            deleted = self.objects.get(ref.namespace, {}).pop((ref.kind, ref.name), None) is not None
        else:
            deleted = self.resources.pop(ref, None) is not None
            self.sources.pop(ref, None)
        if deleted:
            self._tell(ref, None)
        return deleted

    def list(self, kind: str | None = None, namespace: str | None = None) -> list[dict]:
        return [
            self.resources[ref]
            for ref in sorted(self.resources, key=lambda r: (SERVED_KINDS.index(r.kind), r.namespace, r.name))
            if (kind is None or ref.kind == kind) and (namespace is None or ref.namespace == namespace)
        ]

    def in_namespace(self, namespace: str) -> list[Ref]:
        return [ref for ref in self.resources if ref.namespace == namespace]

    def objects_in(self, namespace: str) -> dict[tuple[str, str], dict]:
        """The namespace's Secrets and ConfigMaps, by (kind, name)."""
        return self.objects.get(namespace, {})

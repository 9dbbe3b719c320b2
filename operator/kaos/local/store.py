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
from kaos.api import DEFAULT_NAMESPACE, SERVED_KINDS, name_problems, shown
from kaos.local.manifests import CORE_KINDS, ApplyError, apply_order
from kaos.reconcile import Ref

# Told of each stored change: (ref, the stored document), or (ref, None) when it was deleted.
Watcher = Callable[[Ref, "dict | None"], None]


def validate_documents(documents: list[tuple[dict, str]], crd_dir: Path) -> list[tuple[dict, str]]:
    """Validate every document first (so that a bad file applies nothing), in apply order. A
    resource given twice is refused too, naming both sources: one apply says each resource once."""
    validated, problems = [], []
    first_given: dict[Ref, tuple[int, str]] = {}
    for position, (document, source) in enumerate(documents, 1):
        try:
            valid = validate_document(document, crd_dir)
        except ValueError as error:
            problems.append(f"{source}: {error}")
            continue
        ref = ref_of_document(valid)
        if ref in first_given:
            problems.append(_given_twice(ref, first_given[ref], (position, source)))
        else:
            first_given[ref] = (position, source)
        validated.append((valid, source))
    if problems:
        raise ApplyError("\n".join(problems))
    return sorted(validated, key=lambda item: apply_order(item[0]["kind"]))


def ref_of_document(document: dict) -> Ref:
    """The Ref of a validated document (of any kind it stores)."""
    metadata = document["metadata"]
    return Ref(document["kind"], metadata.get("namespace") or DEFAULT_NAMESPACE, metadata["name"])


def _given_twice(ref: Ref, first: tuple[int, str], second: tuple[int, str]) -> str:
    (first_position, first_source), (second_position, second_source) = first, second
    if first_source == second_source:  # e.g. two documents of one request that names no files
        first_source += f" (document {first_position} of the apply)"
        second_source += f" (document {second_position} of the apply)"
    return (f"{ref.kind} {ref.namespace}/{ref.name} is given twice in one apply, "
            f"in {first_source} and in {second_source}; give each resource once")


def validate_document(document: dict, crd_dir: Path) -> dict:
    """The document as it is stored (a KAOS resource with its CRD's defaults), or ValueError."""
    if not isinstance(document, dict):
        raise ValueError("a manifest must be a mapping")
    kind = document.get("kind")
    metadata = document.get("metadata") if isinstance(document.get("metadata"), dict) else {}
    if kind in CORE_KINDS:
        label = f"{kind} {metadata.get('namespace') or DEFAULT_NAMESPACE}/{metadata.get('name') or '<unnamed>'}"
        problems = name_problems(kind, metadata.get("namespace"), metadata.get("name"))
        if document.get("apiVersion") != "v1":
            problems.insert(0, f"apiVersion: {shown(document.get('apiVersion'))} is not v1")
        if problems:
            raise ValueError(f"{label}: " + "; ".join(problems))
        return copy.deepcopy(document)
    if kind not in SERVED_KINDS:
        raise ValueError(
            f"kind {kind!r} is not supported by `kaos up` (supported: {', '.join((*SERVED_KINDS, *CORE_KINDS))})"
        )
    return crds.validate(document, crd_dir)  # names checked there, with the schema


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
            ref = ref_of_document(document)
            kind, namespace, name = ref
            metadata = document["metadata"]
            metadata["namespace"] = namespace
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
        """Whether it was there to delete (never, under a name that is no RFC 1123 name)."""
        if name_problems(ref.kind, ref.namespace, ref.name):
            return False
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

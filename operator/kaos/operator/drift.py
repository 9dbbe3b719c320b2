"""Drift of a release's objects (pure): which watched events may be a hand's change, and whether
an object still holds what helm's manifest of its release says.

The operator watches the kinds the workload charts render (RENDERED_KINDS), filtered by the
labels every rendered object carries (RELEASE_LABELS). An event is a suspect when the object was
deleted, or when its last write (status writes aside) was not helm's: the operator's own helm
runs are never suspects, so re-applying a release cannot wake itself. A suspect costs one
read of its release's manifest (``helm status``); only an object that lacks something of the manifest
(deleted, or a field helm set changed) makes the operator apply the release again.
"""

from __future__ import annotations

from typing import Any, Mapping

# (group, version, plural) of what the workload charts render, besides the Deployment (whose
# replica counts the operator indexes: kaos.operator.world). A kind whose API the cluster does
# not serve (no Gateway API: no HTTPRoutes) is not watched until it is (kopf watches the CRDs).
RENDERED_KINDS = (
    ("", "v1", "services"),
    ("", "v1", "configmaps"),
    ("networking.k8s.io", "v1", "networkpolicies"),
    ("gateway.networking.k8s.io", "v1", "httproutes"),
    ("autoscaling", "v2", "horizontalpodautoscalers"),
)
RELEASE_LABELS = {"app.kubernetes.io/part-of": "kaos", "app.kubernetes.io/managed-by": "Helm"}

ObjectKey = tuple[str, str]  # (kind, name) within the release's namespace


def object_key(obj: Mapping[str, Any]) -> ObjectKey:
    return obj.get("kind") or "", (obj.get("metadata") or {}).get("name") or ""


def written_by_helm(manager: str) -> bool:
    """helm's field manager: "helm" (Helm 3's updates, Helm 4's server-side apply)."""
    return manager.split("/")[0].startswith("helm")


def hand_written(obj: Mapping[str, Any]) -> bool:
    """Was the object's last write (status writes, a controller's, aside) not helm's? managedFields
    times have a resolution of a second: a write in the same second as helm's counts as last."""
    entries = [entry for entry in (obj.get("metadata") or {}).get("managedFields") or []
               if not entry.get("subresource")]
    helm_last = max((entry.get("time") or "" for entry in entries if written_by_helm(entry.get("manager") or "")),
                    default="")
    return any(not written_by_helm(entry.get("manager") or "") and (entry.get("time") or "") >= helm_last
               for entry in entries)


def suspect(event_type: str | None, obj: Mapping[str, Any]) -> bool:
    """May this event be drift? A deletion, or a write that was not helm's."""
    return event_type == "DELETED" or hand_written(obj)


def differences(wanted: Any, live: Any, path: str = "") -> list[str]:
    """Where ``live`` lacks what ``wanted`` (an object of helm's manifest) holds: the paths of
    the fields it misses or holds otherwise. What the API server or a controller added beside
    them (defaults, status, annotations) is no difference."""
    if isinstance(wanted, Mapping):
        if not isinstance(live, Mapping):
            return [path or "."]
        found: list[str] = []
        for key, value in wanted.items():
            if key not in live:
                if value not in (None, {}, []):
                    found.append(f"{path}.{key}")
                continue
            found += differences(value, live[key], f"{path}.{key}")
        return found
    if isinstance(wanted, list):
        if not isinstance(live, list) or len(live) != len(wanted):
            return [path]
        return [difference for index, (one, other) in enumerate(zip(wanted, live))
                for difference in differences(one, other, f"{path}[{index}]")]
    if wanted == live or str(wanted) == str(live):  # 8000 and "8000" are one port to the API server
        return []
    return [path]


def drifted(manifest: list[Mapping[str, Any]], seen: Mapping[ObjectKey, Mapping[str, Any] | None]) -> dict[ObjectKey, list[str]]:
    """The suspects (their last state seen; None: deleted) that lack something of the manifest:
    "deleted", or the paths that differ. A suspect the manifest does not hold is no drift
    (helm removed it, or it is not the release's)."""
    wanted = {object_key(obj): obj for obj in manifest if obj}
    found: dict[ObjectKey, list[str]] = {}
    for key, live in seen.items():
        if key not in wanted:
            continue
        if live is None:
            found[key] = ["deleted"]
        elif paths := differences(_comparable(wanted[key]), _comparable(live)):
            found[key] = paths
    return found


def _comparable(obj: Mapping[str, Any]) -> dict[str, Any]:
    """What helm sets of an object: everything but its status and the metadata helm does not own."""
    metadata = obj.get("metadata") or {}
    kept = {key: metadata[key] for key in ("labels", "annotations") if key in metadata}
    return {**{key: value for key, value in obj.items() if key not in ("status", "metadata")}, "metadata": kept}

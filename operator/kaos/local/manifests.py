"""Read manifests from files and folders (multi-document YAML), remembering where each came from."""

from __future__ import annotations

from pathlib import Path

import yaml

from kaos.api import SERVED_KINDS

# The Kubernetes kinds `kaos up` keeps besides its own (what env valueFrom and volumes read).
CORE_KINDS = ("Secret", "ConfigMap")


class ManifestError(ValueError):
    """A file that cannot be read as manifests; the message names the file."""


def manifest_files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())
    if path.is_file():
        return [path]
    raise ManifestError(f"{path}: no such file or folder")


def load_manifests(paths: list[str]) -> list[tuple[dict, str]]:
    """(document, source file) for every non-empty YAML document under ``paths``."""
    documents = []
    for given in paths:
        for path in manifest_files(Path(given)):
            try:
                loaded = list(yaml.safe_load_all(path.read_text()))
            except (yaml.YAMLError, UnicodeDecodeError) as error:
                raise ManifestError(f"{path}: not valid YAML: {error}") from None
            for document in loaded:
                if document is None:
                    continue
                if not isinstance(document, dict):
                    raise ManifestError(f"{path}: a manifest must be a mapping, got {type(document).__name__}")
                if document.get("kind") == "List":
                    documents += [(item, str(path)) for item in document.get("items") or []]
                else:
                    documents.append((document, str(path)))
    return documents


def apply_order(kind: str) -> int:
    """Secrets and ConfigMaps first, then ModelAPIs, MCP servers, agents, triggers."""
    order = (*CORE_KINDS, *SERVED_KINDS)
    return order.index(kind) if kind in order else len(order)


class ApplyError(ValueError):
    """A manifest the control plane refuses; the message names the file and the field."""

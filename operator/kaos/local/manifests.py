"""Read manifests from files and folders (multi-document YAML), remembering where each came from.

Each file goes through the one bounded YAML loader (kaos.bounded_yaml: size, aliases, depth)."""

from __future__ import annotations

from pathlib import Path

from kaos.api import SERVED_KINDS
from kaos.bounded_yaml import MAX_BYTES, YAMLInputError, load_all, too_large

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


def read_bounded(path: Path) -> bytes:
    """The file's bytes, reading no more than MAX_BYTES + 1: a larger file is refused unparsed."""
    try:
        with path.open("rb") as file:
            data = file.read(MAX_BYTES + 1)
    except OSError as error:
        raise ManifestError(f"{path}: cannot be read: {error.strerror or error}") from None
    if len(data) > MAX_BYTES:
        raise ManifestError(too_large(str(path)))
    return data


def load_manifests(paths: list[str]) -> list[tuple[dict, str]]:
    """(document, source) for every non-empty YAML document under ``paths``. The source is the
    file, with the document's place in it when the file holds several: ``a.yaml (document 2)``,
    and ``(items[0])`` for each item of a List."""
    documents = []
    for given in paths:
        for path in manifest_files(Path(given)):
            try:
                loaded = load_all(read_bounded(path), str(path))
            except YAMLInputError as error:
                raise ManifestError(str(error)) from None
            several = sum(document is not None for document in loaded) > 1
            for number, document in enumerate(loaded, 1):
                if document is None:
                    continue
                source = f"{path} (document {number})" if several else str(path)
                if not isinstance(document, dict):
                    raise ManifestError(f"{source}: a manifest must be a mapping, got {type(document).__name__}")
                if document.get("kind") == "List":
                    items = document.get("items") or []
                    documents += [(item, f"{source} (items[{index}])") for index, item in enumerate(items)]
                else:
                    documents.append((document, source))
    return documents


def apply_order(kind: str) -> int:
    """Secrets and ConfigMaps first, then ModelAPIs, MCP servers, agents, triggers."""
    order = (*CORE_KINDS, *SERVED_KINDS)
    return order.index(kind) if kind in order else len(order)


class ApplyError(ValueError):
    """A manifest the control plane refuses; the message names the file and the field."""

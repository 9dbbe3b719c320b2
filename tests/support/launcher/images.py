"""Images of the cluster's own parts (the pause container, CoreDNS, Traefik): each holds a static
binary of scripts/setup-cluster's in /, pushed to the cluster's registry with crane."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from tests.support.launcher.steps import run


def version_tag(bin: Path, part: str) -> str:
    """The version of the part's cache folder, which BIN/<part> links into (coredns-v1.14.7-bc62a054/
    gives v1.14.7-bc62a054)."""
    return (bin / part).resolve().parent.name.removeprefix(f"{part}-")


def image_reference(registry: str, name: str, tag: str) -> str:
    return f"{registry}/kaos-cluster/{name}:{tag}"


def binary_image(crane: Path, registry: str, name: str, tag: str, files: Sequence[Path]) -> str:
    """An image holding ``files`` in / (owned by root, dated 0), the first its entrypoint, for
    linux/amd64 with PATH=/; pushed, and its reference returned."""
    ref = image_reference(registry, name, tag)
    with tempfile.TemporaryDirectory() as work:
        layer = Path(work) / "layer"
        layer.mkdir()
        for file in files:
            shutil.copy(file, layer / file.name)
        tar = Path(work) / "layer.tar"
        run(["tar", "--owner=0", "--group=0", "--numeric-owner", "--mtime=@0", "-C", layer, "-cf", tar, "--",
             *sorted(f.name for f in layer.iterdir())])
        run([crane, "append", "--oci-empty-base", "-f", tar, "-t", ref])
        run([crane, "mutate", ref, "--set-platform", "linux/amd64", "--entrypoint", f"/{files[0].name}",
             "--env", "PATH=/", "-t", ref])
    return ref

"""Paths under KAOS_HOME built from names: the one check that they stay inside.

Names are RFC 1123 labels before they get here (kaos.api.name_problems, checked by the store and
the reconcile core), so no name holds '/' or '..'. This is the second line: a caller that
forgets the first still cannot write outside the home. The check is lexical (absolute parts and
'..' resolved without following links), so a link the user made inside the home is theirs to
follow.
"""

from __future__ import annotations

import os
from pathlib import Path


class OutsideHome(ValueError):
    """A path built from names that would leave its root."""


def inside(root: Path, *parts: str) -> Path:
    """``root / parts...``; OutsideHome when the result is not inside ``root``."""
    path = root.joinpath(*parts)
    base, resolved = os.path.abspath(root), os.path.abspath(path)
    if os.path.commonpath([base, resolved]) != base or resolved == base:
        raise OutsideHome(f"{'/'.join(parts)!r} leads out of {root}; refusing to use {path}")
    return path

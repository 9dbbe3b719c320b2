"""The GitOps tools scripts/setup-gitops builds (Argo CD, ct, crane) and links into .tools/bin."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / ".tools" / "bin"


def tool(name: str) -> Path:
    """.tools/bin/<name>, resolved to its build folder in ~/.cache/kaos/<name>-<version>/."""
    path = BIN / name
    if not path.exists():
        raise AssertionError(f"{path} is missing: run scripts/setup-gitops (scripts/test does)")
    return path.resolve()

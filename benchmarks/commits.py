"""Commits checked out beside this one, for benchmarks that compare runtimes (runtime_ab, runtime_bench).

``checked_out([rev, ...])`` adds a detached git worktree per revision in a temporary folder
and removes them at the end; an agent runs a commit's runtime with
``PYTHONPATH=<worktree>/runtime`` (the venv, the mock model and the load generator stay this
checkout's).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from contextlib import contextmanager
from typing import Iterator

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def short_sha(path: str, rev: str = "HEAD") -> str:
    return subprocess.run(["git", "rev-parse", "--short", rev], cwd=path, capture_output=True, text=True,
                          check=True).stdout.strip()


@contextmanager
def checked_out(revs: list[str]) -> Iterator[list[tuple[str, str]]]:
    """(worktree path, short sha) of each revision, in order; removed on exit."""
    folder = tempfile.mkdtemp(prefix="kaos-ab-")
    trees: list[tuple[str, str]] = []
    try:
        for index, rev in enumerate(revs):
            path = os.path.join(folder, str(index))
            subprocess.run(["git", "worktree", "add", "--detach", "-q", path, rev], cwd=ROOT, check=True)
            trees.append((path, short_sha(path)))
        yield trees
    finally:
        for path, _ in trees:
            subprocess.run(["git", "worktree", "remove", "--force", path], cwd=ROOT, check=False)
        shutil.rmtree(folder, ignore_errors=True)

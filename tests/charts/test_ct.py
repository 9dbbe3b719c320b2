"""chart-testing's real `ct lint` (built by scripts/setup-gitops) with ct.yaml: yamale on each
Chart.yaml, yamllint on Chart.yaml, values.yaml and the ci/ values files, `helm lint --strict`
per ci/ values file; and, on a branch, the version bump of every changed chart."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.charts.rendering import CHARTS, HELM_ENV, ROOT, helm4
from tests.gitops.tools import tool

GIT_IDENTITY = {"GIT_AUTHOR_NAME": "kaos tests", "GIT_AUTHOR_EMAIL": "tests@kaos.invalid",
                "GIT_COMMITTER_NAME": "kaos tests", "GIT_COMMITTER_EMAIL": "tests@kaos.invalid"}


def ct(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """ct with helm, yamllint and yamale (the venv's) on PATH, as scripts/test has them."""
    path = os.pathsep.join([str(Path(helm4()).parent), str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return subprocess.run([str(tool("ct")), *args], cwd=cwd, capture_output=True, text=True, timeout=600,
                          env={**os.environ, **HELM_ENV, "PATH": path})


def git(*args: str, cwd: Path) -> str:
    result = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=60,
                            env={**os.environ, **GIT_IDENTITY})
    assert result.returncode == 0, f"git {' '.join(args)}: {result.stderr}"
    return result.stdout


def test_ct_lint_all_passes():
    result = ct("lint", "--config", "ct.yaml", "--all", cwd=ROOT)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr
    for chart in ("kaos", "agent", "modelapi", "mcpserver", "kaos-common"):
        assert f" ✔︎ {chart} => " in result.stdout, result.stdout[-2000:]


def test_ct_lint_fails_a_chart_with_a_yaml_error(tmp_path):
    """The same run catches what yamllint's rules forbid in a values file."""
    shutil.copytree(CHARTS, tmp_path / "charts", ignore=shutil.ignore_patterns("charts"))
    shutil.copy(ROOT / "ct.yaml", tmp_path)
    values = tmp_path / "charts" / "kaos" / "values.yaml"
    values.write_text(values.read_text() + "clusterDomain: cluster.local\n")  # a duplicated key
    result = ct("lint", "--config", "ct.yaml", "--charts", "charts/kaos", cwd=tmp_path)
    assert result.returncode != 0 and "duplication of key" in result.stdout + result.stderr


# A platform template, a workload chart's template, the library's helper: each a change to its own chart only.
CHANGES = {"kaos": "templates/NOTES.txt", "agent": "templates/deployment.yaml", "kaos-common": "templates/_names.tpl"}


def contributor_clone(folder: Path) -> Path:
    """A contributor's clone of the charts: remote origin with branch main, and a branch of its own."""
    work, origin = folder / "work", folder / "origin.git"
    shutil.copytree(CHARTS, work / "charts", ignore=shutil.ignore_patterns("charts"))
    shutil.copy(ROOT / "ct.yaml", work)
    git("init", "-q", "-b", "main", cwd=work)
    git("add", ".", cwd=work)
    git("commit", "-q", "-m", "charts", cwd=work)
    git("clone", "-q", "--bare", str(work), str(origin), cwd=folder)
    git("remote", "add", "origin", str(origin), cwd=work)
    git("fetch", "-q", "origin", cwd=work)
    git("checkout", "-q", "-b", "change", cwd=work)
    return work


@pytest.mark.parametrize("chart", CHANGES)
def test_a_chart_changed_without_a_version_bump_fails_ct_lint_on_a_branch(tmp_path, chart):
    work = contributor_clone(tmp_path)
    changed = work / "charts" / chart / CHANGES[chart]
    changed.write_text(changed.read_text() + "{{- /* a contributor's change */ -}}\n")
    git("commit", "-q", "-am", f"{chart}: a change", cwd=work)

    unbumped = ct("lint", "--config", "ct.yaml", cwd=work)
    assert unbumped.returncode != 0, unbumped.stdout[-2000:]
    assert "chart version not ok. Needs a version bump!" in unbumped.stdout + unbumped.stderr
    processed = unbumped.stdout.split("Charts to be processed:")[1].split("Linting chart")[0]
    listed = {line.split(" => ")[0].strip() for line in processed.splitlines() if " => " in line}
    assert listed == {chart}, processed  # only the changed chart

    chart_yaml = work / "charts" / chart / "Chart.yaml"
    meta = yaml.safe_load(chart_yaml.read_text())
    major, minor, patch = (int(part) for part in meta["version"].split("."))
    chart_yaml.write_text(chart_yaml.read_text().replace(f"version: {meta['version']}\n",
                                                         f"version: {major}.{minor}.{patch + 1}\n", 1))
    git("commit", "-q", "-am", f"{chart}: bump", cwd=work)
    bumped = ct("lint", "--config", "ct.yaml", cwd=work)
    assert bumped.returncode == 0, bumped.stdout[-3000:] + bumped.stderr

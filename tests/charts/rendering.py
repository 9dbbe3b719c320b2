"""Render the charts with the real helm binaries (Helm 4, and Helm 3 for compatibility)."""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
CHARTS = ROOT / "charts"
WORKLOAD_CHARTS = ("agent", "modelapi", "mcpserver")
ALL_CHARTS = ("kaos", *WORKLOAD_CHARTS)
LIBRARY_CHART = "kaos-common"  # the workload charts' dependency; renders nothing by itself
NAMESPACE = "team"


class HelmMissing(RuntimeError):
    pass


def _find(candidates: list[Path | str | None], what: str) -> str:
    for candidate in candidates:
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    raise HelmMissing(f"{what} not found: run scripts/setup (it fetches helm into .tools/)")


@functools.cache
def helm4() -> str:
    return _find([ROOT / ".tools" / "bin" / "helm", shutil.which("helm")], "helm (v4)")


@functools.cache
def helm3() -> str:
    return _find([ROOT / ".tools" / "helm3" / "helm"], "Helm 3 (.tools/helm3/helm)")


def ci_values_files(chart: str) -> list[Path]:
    return sorted((CHARTS / chart / "ci").glob("*.yaml"))


HELM_ENV = {"HELM_CACHE_HOME": "/tmp/kaos-helm/cache", "HELM_CONFIG_HOME": "/tmp/kaos-helm/config",
            "HELM_DATA_HOME": "/tmp/kaos-helm/data"}


def run_helm(args: list[str], helm: str | None = None, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([helm or helm4(), *args], input=stdin, capture_output=True, text=True,
                          env={**os.environ, **HELM_ENV}, timeout=60)


@functools.cache
def _render_text(chart: str, values_json: str, files: tuple, release: str, namespace: str, crds: bool, helm: str,
                 skip_schema: bool) -> str:
    args = ["template", release, str(CHARTS / chart), "--namespace", namespace]
    if crds:
        args.append("--include-crds")
    if skip_schema:
        args.append("--skip-schema-validation")  # to reach the templates' own checks
    for path in files:
        args += ["-f", path]
    if values_json != "{}":
        args += ["-f", "-"]  # values as JSON on stdin keep their types exactly
    result = run_helm(args, helm, stdin=values_json)
    if result.returncode != 0:
        raise RenderError(result.stderr.strip())
    return result.stdout


class RenderError(RuntimeError):
    """helm template failed; the message is helm's."""


def render_text(chart: str, values: dict | None = None, files=(), release: str | None = None,
                namespace: str = NAMESPACE, crds: bool = False, helm: str | None = None,
                skip_schema: bool = False) -> str:
    return _render_text(chart, json.dumps(values or {}, sort_keys=True), tuple(str(f) for f in files),
                        release or f"{chart}-release", namespace, crds, helm or helm4(), skip_schema)


def render(chart: str, values: dict | None = None, files=(), **kwargs) -> list[dict]:
    """The rendered objects (empty documents dropped)."""
    return [doc for doc in yaml.safe_load_all(render_text(chart, values, files, **kwargs)) if doc]


def render_error(chart: str, values: dict | None = None, files=(), **kwargs) -> str:
    try:
        render_text(chart, values, files, **kwargs)
    except RenderError as error:
        return str(error)
    raise AssertionError(f"helm template {chart} succeeded, expected it to fail")


def one(docs: list[dict], kind: str, name: str | None = None) -> dict:
    found = [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {[d['metadata']['name'] for d in found]}"
    return found[0]


def kinds(docs: list[dict]) -> list[str]:
    return sorted(d["kind"] for d in docs)


def container(docs: list[dict], name: str | None = None) -> dict:
    containers = one(docs, "Deployment")["spec"]["template"]["spec"]["containers"]
    return containers[0] if name is None else next(c for c in containers if c["name"] == name)


def env_of(c: dict) -> dict:
    """name -> value (or the valueFrom mapping)."""
    names = [e["name"] for e in c.get("env", [])]
    assert len(names) == len(set(names)), f"duplicate env names in {names}"
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in c.get("env", [])}


def next_release(folder: Path, chart: str = "kaos") -> Path:
    """A copy of ``chart`` in ``folder`` as another release (version and appVersion 99.0.0): what
    an upgrade renders, for the tests of what it replaces."""
    release = folder / chart
    shutil.copytree(CHARTS / chart, release)
    chart_yaml = release / "Chart.yaml"
    meta = yaml.safe_load(chart_yaml.read_text())
    chart_yaml.write_text(chart_yaml.read_text().replace(f"version: {meta['version']}\n", "version: 99.0.0\n", 1)
                          .replace(f'appVersion: "{meta["appVersion"]}"', 'appVersion: "99.0.0"', 1))
    return release

"""The packages keep their layers: import-linter's contracts in pyproject.toml ([tool.importlinter]).

- the CLI (kaos.cli) on top; the operator (kaos.operator) and the local control plane
  (kaos.local) beside each other, never importing each other; the helm and MCP edges, the
  web console and the trigger runner (kaos.helm, kaos.mcp_discovery, kaos.console,
  kaos.trigger_runner) below them; the HTTP forwarding and the one Kubernetes client (kaos.proxy,
  kaos.kube_api) below those; the reconcile core, CRD validation, the Trigger kind's core
  (kaos.triggers), settings, backoff, metrics (kaos.metrics) and API names at the bottom;
- of the bottom, all but the metrics (the reconcile core, CRD validation, settings, backoff
  and API names) import no kopf, pyhelm3, aiohttp, HTTP client, MCP SDK or server;
- the runtime (kaos_runtime, the data plane) and the control side (kaos) import nothing of each other;
- inside the local control plane (kaos.local): the server, then the control plane that puts the
  parts together, then the reconcile loop, then its TriggerHost (trigger_host), then the workloads
  and the resource store beside each other (never importing each other);
- inside the runtime: the command (__main__) on top; the agent's service, the python-string MCP
  server and the engines beside each other; the protocols; the agentic loop; the clients; the
  memory; the core (settings, errors, auth, budgets, metrics, telemetry) at the bottom.

The second test breaks each rule in a copy of the packages and checks that the linter says so.
The last one keeps the KAOS_* variables in kaos.settings: no other module of kaos reads one.
"""

import ast
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"kaos": ROOT / "operator" / "kaos", "kaos_runtime": ROOT / "runtime" / "kaos_runtime"}

# One import that breaks each rule: the file in the copy that gets it, and the module it imports.
VIOLATIONS = [line.split() for line in """
    kaos/local/gateway.py kaos.operator.world
    kaos/operator/world.py kaos.local.gateway
    kaos/local/ports.py kaos.cli.display
    kaos/helm.py kaos.local.state
    kaos/api.py kaos.reconcile.refs
    kaos/reconcile/values.py httpx
    kaos/crds.py kopf
    kaos/settings.py pyhelm3
    kaos/reconcile/plan.py aiohttp
    kaos_runtime/__init__.py kaos.api
    kaos/local/store.py kaos.local.workloads
    kaos/kube_api.py kaos.console.catalog
    kaos/local/trigger_host.py kaos.local.reconcile_loop
    kaos_runtime/core/settings.py kaos_runtime.loop.tool_calling
    kaos_runtime/clients/model.py kaos_runtime.loop.step_gate
    kaos_runtime/mcp_server/server.py kaos_runtime.service.app
""".strip().splitlines()]


def shown(path: str, imported: str) -> str:
    """How the linter names the import: ``kaos.local.gateway -> kaos.operator.world``."""
    return f"{path.removesuffix('.py').removesuffix('/__init__').replace('/', '.')} -> {imported}"



def lint_imports(pythonpath: Path | None = None) -> subprocess.CompletedProcess:
    program = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    if program is None:
        pytest.fail("lint-imports is not installed (the dev extra has import-linter): run scripts/setup-test")
    env = None
    if pythonpath is not None:  # the copy comes first on sys.path, before the installed packages
        env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    return subprocess.run(
        [program, "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
        cwd=ROOT, capture_output=True, text=True, env=env, timeout=300,
    )


def test_the_import_contracts_hold():
    result = lint_imports()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_the_linter_reports_every_broken_rule(tmp_path):
    for name, source in PACKAGES.items():
        shutil.copytree(source, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    for path, imported in VIOLATIONS:
        target = tmp_path / path
        target.write_text(target.read_text() + f"\nimport {imported}  # a deliberate violation\n")
    result = lint_imports(pythonpath=tmp_path)
    output = " ".join((result.stdout + result.stderr).split())
    assert result.returncode != 0, output
    contracts = len(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"])
    assert f"0 kept, {contracts} broken" in output, output
    missed = [shown(*violation) for violation in VIOLATIONS if shown(*violation) not in output]
    assert not missed, f"not reported: {missed}\n{result.stdout}"


def _kaos_variables_read(tree: ast.AST) -> list[tuple[int, str]]:
    """``os.environ[...]``, ``os.environ.get(...)``/``pop``/``setdefault`` and ``os.getenv(...)``
    of a literal KAOS_* name."""
    def is_environ(node) -> bool:
        return isinstance(node, ast.Attribute) and node.attr == "environ"

    found = []
    for node in ast.walk(tree):
        name = None
        if isinstance(node, ast.Subscript) and is_environ(node.value):
            name = node.slice
        elif isinstance(node, ast.Call) and node.args and isinstance(node.func, ast.Attribute) and (
            (node.func.attr in ("get", "pop", "setdefault") and is_environ(node.func.value))
            or node.func.attr == "getenv"
        ):
            name = node.args[0]
        if isinstance(name, ast.Constant) and str(name.value).startswith("KAOS_"):
            found.append((node.lineno, name.value))
    return found


def test_kaos_variables_are_read_by_the_settings_only():
    assert _kaos_variables_read(ast.parse('import os\nos.environ.get("KAOS_HOME")\nos.getenv("KAOS_HELM")')), \
        "the check finds a read"
    reads = [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for path in sorted(PACKAGES["kaos"].rglob("*.py"))
        if path.name != "settings.py" or path.parent != PACKAGES["kaos"]
        for line, name in _kaos_variables_read(ast.parse(path.read_text()))
    ]
    assert reads == [], "read KAOS_* variables through kaos.settings.Settings.from_env()"

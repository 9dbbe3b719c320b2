"""Two distributions: kaos-runtime (runtime/, the data plane) and kaos (operator/, the control side).

- each one's requirements hold what its package imports, and nothing of the other side's;
- their console scripts and the console's static files are installed;
- `kaos up` installs a workload's missing program with pip (the decision, with a stand-in pip),
  or says which pip command to run when KAOS_INSTALL_PROGRAMS=false;
- and for real: in a throwaway venv that has the dev venv's third-party packages but neither of
  ours, kaos (a wheel) installs kaos-runtime from a locally built wheel, offline, where PIP_*
  variables tell pip to look.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from kaos.local.programs import LITELLM_REQUIREMENT, runtime_requirement
from kaos.local.workloads import Workloads
from kaos.reconcile import Plan, Ref
from kaos.settings import Settings, SettingsError

ROOT = Path(__file__).resolve().parents[1]
DISTRIBUTIONS = {"kaos": ROOT / "operator", "kaos-runtime": ROOT / "runtime"}
PACKAGES = {"kaos": "kaos", "kaos-runtime": "kaos_runtime"}
# What only the runtime needs: none of it is a requirement of kaos. (PyJWT is both sides': the
# agents verify access tokens, the console's sign-in and `kaos login` verify ID tokens.)
RUNTIME_ONLY = {"kaos-runtime", "litellm", "a2a-sdk", "redis", "fastapi", "llama-cpp-python",
                "opentelemetry-sdk", "opentelemetry-exporter-otlp-proto-http", "opentelemetry-api"}
CONTROL_ONLY = {"kaos", "kopf", "pyhelm3", "jsonschema", "pyyaml"}
SCRIPTS = {"kaos": {"kaos", "kaos-operator", "kaos-console"}, "kaos-runtime": {"kaos-runtime"}}


def project(distribution: str) -> dict:
    return tomllib.loads((DISTRIBUTIONS[distribution] / "pyproject.toml").read_text())["project"]


def requirement_names(distribution: str, extras: tuple[str, ...] = ()) -> set[str]:
    """The installed distribution's direct requirements (with these extras)."""
    names = set()
    for line in metadata.requires(distribution) or []:
        requirement = Requirement(line)
        if requirement.marker is None or any(requirement.marker.evaluate({"extra": e}) for e in extras or ("",)):
            names.add(canonicalize_name(requirement.name))
    return names


def closure(distribution: str, extras: tuple[str, ...] = ()) -> set[str]:
    """The distribution and everything it requires, transitively (those installed here)."""
    seen, todo = set(), [(distribution, extras)]
    while todo:
        name, wanted = todo.pop()
        if canonicalize_name(name) in seen:
            continue
        seen.add(canonicalize_name(name))
        for line in metadata.requires(name) or []:
            requirement = Requirement(line)
            if requirement.marker is not None and not any(
                requirement.marker.evaluate({"extra": e}) for e in wanted or ("",)
            ):
                continue
            try:
                metadata.distribution(requirement.name)
            except metadata.PackageNotFoundError:
                continue  # an optional extra's or another platform's requirement
            todo.append((requirement.name, tuple(requirement.extras)))
    return seen


def imported_modules(package: str) -> set[str]:
    """The top-level modules the package's source imports (absolute imports)."""
    folder = Path(__import__(package).__file__).parent
    names = set()
    for path in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return names - set(sys.stdlib_module_names) - {"__future__", package}


def test_both_distributions_have_one_version():
    assert project("kaos")["version"] == project("kaos-runtime")["version"] == metadata.version("kaos")
    assert runtime_requirement() == f"kaos-runtime=={metadata.version('kaos')}"


def test_kaos_requires_nothing_of_the_runtime():
    assert requirement_names("kaos") & RUNTIME_ONLY == set()
    assert closure("kaos") & {"kaos-runtime", "litellm", "a2a-sdk", "redis", "fastapi"} == set()


def test_the_runtime_requires_nothing_of_the_control_side():
    assert requirement_names("kaos-runtime", ("llamacpp",)) & CONTROL_ONLY - {"pyyaml"} == set()
    assert closure("kaos-runtime", ("llamacpp",)) & {"kaos", "kopf", "pyhelm3"} == set()


@pytest.mark.parametrize("distribution, extras", [("kaos", ()), ("kaos-runtime", ("llamacpp",))])
def test_what_each_package_imports_is_in_its_own_requirements(distribution, extras):
    providers = metadata.packages_distributions()
    needed = closure(distribution, extras)
    missing = {
        module: providers.get(module)
        for module in imported_modules(PACKAGES[distribution])
        if not {canonicalize_name(d) for d in providers.get(module, [])} & needed
    }
    assert missing == {}, f"{distribution} imports these, which it does not require"


@pytest.mark.parametrize("distribution", SCRIPTS)
def test_the_console_scripts_are_installed_and_load(distribution):
    entry_points = {e.name: e for e in metadata.distribution(distribution).entry_points if e.group == "console_scripts"}
    assert set(entry_points) == SCRIPTS[distribution]
    for entry_point in entry_points.values():
        assert callable(entry_point.load())
        assert (Path(sys.executable).parent / entry_point.name).exists()


@pytest.mark.parametrize("image, own, other", [("runtime", "runtime", "operator"), ("operator", "operator", "runtime")])
def test_each_image_installs_only_its_own_distribution(image, own, other):
    recipe = (ROOT / "docker" / f"{image}.Dockerfile").read_text()
    assert re.findall(r"pip install (\S+)", recipe) == [f"./{own}"]
    copied = re.findall(r"^COPY (?!--from)(\S+)", recipe, re.MULTILINE)
    assert own in copied and other not in copied and "pyproject.toml" not in copied


# The install decision of `kaos up`, with a stand-in pip.

AGENT_DEPLOYMENT = {
    "kind": "Deployment", "metadata": {"name": "agent-a"},
    "spec": {"template": {"spec": {"containers": [
        {"image": "ghcr.io/kaos-tools/kaos-runtime:0.1.0", "command": ["kaos-runtime"], "args": ["agent"]},
    ]}}},
}
PROXY_DEPLOYMENT = {
    "kind": "Deployment", "metadata": {"name": "modelapi-m"},
    "spec": {"template": {"spec": {"containers": [
        {"image": "ghcr.io/berriai/litellm:main-v1.106.2", "args": ["--port", "4000"]},
    ]}}},
}


def workloads(tmp_path, deployment, install_programs=True, install_error=""):
    """Workloads that render ``deployment``, find a program once its stand-in pip 'installed' it."""
    installed: list[str] = []
    programs = {runtime_requirement(): "kaos-runtime", LITELLM_REQUIREMENT: "litellm"}

    def which(program):
        return sys.executable if any(programs[r] == program for r in installed) else None

    async def install(requirement):
        installed.append(requirement)
        return install_error

    async def render(chart, release, namespace, values):
        return [deployment]

    settings = Settings(home=tmp_path, install_programs=install_programs)
    return Workloads(tmp_path, settings, render, which, install), installed


async def deployed(workloads) -> tuple[str, Ref]:
    """What `kaos up` does for one resource whose plan deploys: its error message, and the resource."""
    ref = Ref("Agent", "default", "a")
    plan = Plan(phase="Deploy", message="", chart="agent", release="agent-a", values={}, endpoint="")
    return await workloads.run(ref, plan, {}, lambda: None), ref


@pytest.mark.parametrize("deployment, requirement", [
    (AGENT_DEPLOYMENT, runtime_requirement()), (PROXY_DEPLOYMENT, LITELLM_REQUIREMENT),
])
async def test_a_missing_program_is_installed_then_run(tmp_path, deployment, requirement):
    local, installed = workloads(tmp_path, deployment)
    try:
        error, ref = await deployed(local)
        assert error == ""
        assert installed == [requirement]
        assert local[ref].process.argv[0] == sys.executable
    finally:
        await local.stop_all()


async def test_without_installing_the_error_names_the_pip_command(tmp_path):
    local, installed = workloads(tmp_path, AGENT_DEPLOYMENT, install_programs=False)
    error, ref = await deployed(local)
    assert installed == []
    assert "needs the `kaos-runtime` program, which is not installed" in error
    assert f"pip install {runtime_requirement()}`" in error
    assert "KAOS_INSTALL_PROGRAMS=false" in error
    assert ref not in local


async def test_a_failed_install_is_the_error(tmp_path):
    local, installed = workloads(tmp_path, AGENT_DEPLOYMENT, install_error="`pip install x` failed (exit code 1): no")
    error, _ = await deployed(local)
    assert installed == [runtime_requirement()]
    assert "installing it: `pip install x` failed (exit code 1): no" in error


def test_the_setting_reads_its_variable():
    assert Settings.from_env({}).install_programs is True
    assert Settings.from_env({"KAOS_INSTALL_PROGRAMS": "false"}).install_programs is False
    with pytest.raises(SettingsError, match="KAOS_INSTALL_PROGRAMS='perhaps'"):
        Settings.from_env({"KAOS_INSTALL_PROGRAMS": "perhaps"})


# For real: pip installs the runtime's wheel into a venv that has kaos only.

def third_party_only(folder: Path) -> Path:
    """A folder of links to the dev venv's site-packages, without kaos, kaos-runtime and their editable hooks."""
    folder.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if entry.name.startswith(("kaos", "__editable__")) or entry.suffix == ".pth":
            continue
        (folder / entry.name).symlink_to(entry)
    return folder


def build_wheel(source: Path, package: str, into: Path, scratch: Path) -> Path:
    """``pip wheel`` of a copy of ``source`` (the build writes into the tree it builds), offline; links
    are copied as what they point to (kaos/charts is a link to the repository's charts)."""
    copy = scratch / source.name
    subprocess.run(["cp", "-rL", str(source), str(copy)], check=True)
    shutil.rmtree(copy / "build", ignore_errors=True)  # a build of the tree's own, older than the copy's files
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "--no-index", "-w", str(into), str(copy)], check=True, timeout=300)
    return next(into.glob(f"{package}-*.whl"))


INSTALLING = """
import asyncio, pathlib, sys
from kaos.local.workloads import Workloads
from kaos.reconcile import Ref
from kaos.settings import Settings, SettingsError

async def render(*_):
    return [{deployment!r}]

async def main():
    local = Workloads(pathlib.Path(sys.argv[1]), Settings(home=sys.argv[1]), render)
    processes = await local._processes_installing(Ref("Agent", "default", "a"), await render(), {{}})
    print(processes[0].argv[0])

asyncio.run(main())
"""


def test_kaos_up_installs_the_runtime_wheel_where_pip_is_told_to_look(tmp_path):
    wheels = tmp_path / "wheels"
    build_wheel(ROOT / "runtime", "kaos_runtime", wheels, tmp_path)
    kaos_wheel = build_wheel(ROOT / "operator", "kaos", wheels, tmp_path)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "dev-third-party.pth").write_text(str(third_party_only(tmp_path / "deps")) + "\n")
    env = {**os.environ, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheels), "PIP_DISABLE_PIP_VERSION_CHECK": "1",
           "PATH": "/usr/bin:/bin"}
    env.pop("PYTHONPATH", None)
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--no-deps", str(kaos_wheel)], env=env, check=True)

    def importable(module):
        return subprocess.run([python, "-c", f"import {module}"], env=env, capture_output=True).returncode == 0

    assert importable("kaos.local.workloads") and not importable("kaos_runtime"), "the venv starts with kaos only"
    assert (site / "kaos" / "console" / "static" / "index.html").is_file(), "the console's files are package data"
    charts = subprocess.run([python, "-c", "from kaos.settings import Settings; print(Settings().charts_dir)"],
                            env=env, capture_output=True, text=True, check=True).stdout.strip()
    assert Path(charts) == site / "kaos" / "charts", "pip install kaos brings the charts kaos up installs"
    assert (site / "kaos" / "charts" / "kaos" / "files" / "crds" / "agent.yaml").is_file()
    assert list((site / "kaos" / "charts" / "agent" / "charts").glob("kaos-common-*.tgz")), "with their library chart"
    result = subprocess.run([python, "-c", INSTALLING.format(deployment=AGENT_DEPLOYMENT), str(tmp_path / "home")],
                            env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(venv / "bin" / "kaos-runtime")
    assert f"installing it: {python} -m pip install {runtime_requirement()}" in result.stderr
    assert importable("kaos_runtime.service.app")
    version = subprocess.run([python, "-c", "from importlib import metadata; print(metadata.version('kaos-runtime'))"],
                             env=env, capture_output=True, text=True, check=True).stdout.strip()
    assert version == metadata.version("kaos")

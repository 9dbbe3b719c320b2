import contextlib
import os
import shutil

import kopf
import pytest
from kopf.testing import KopfRunner

import kaos.operator.handlers as handlers
from kaos.mcp_discovery import ToolsUnavailable, discover_tools
from kaos.settings import Settings
from tests.operator.harness import (
    Cluster,
    RecordingBackend,
    VersionedKubernetes,
    declare_resources,
    kubeconfig_text,
)
from tests.support.polling import eventually

REPO_CHARTS = Settings().charts_dir
TOOLS_BIN = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".tools", "bin"))
NAMESPACE = "team"


@pytest.fixture(autouse=True)
def helm_on_path(monkeypatch):
    if os.path.isdir(TOOLS_BIN):
        monkeypatch.setenv("PATH", f"{TOOLS_BIN}{os.pathsep}{os.environ['PATH']}")
    if not shutil.which("helm"):
        pytest.skip("helm is not installed (run scripts/setup)")


@pytest.fixture
def kmock_options(kmock_options):
    return {**kmock_options, "cls": VersionedKubernetes}


@pytest.fixture
def charts_dir():
    """Where the operator finds its charts; a test may override this fixture."""
    return REPO_CHARTS


async def loopback_only_discovery(url: str) -> list[str]:
    """Real tools/list for servers on 127.0.0.1; cluster Service names are never looked up."""
    if not url.startswith("http://127.0.0.1:"):
        raise ToolsUnavailable(f"{url} is not reachable from the tests")
    return await discover_tools(url)


class Operator:
    def __init__(self, runner, backend, cluster):
        self.runner = runner
        self.helm = backend
        self.cluster = cluster


@pytest.fixture
async def kube(kmock, tmp_path, monkeypatch, charts_dir):
    """kmock serving the KAOS resources, and the env the operator reads its settings from."""
    declare_resources(kmock)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(kubeconfig_text(str(kmock.url)))
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    monkeypatch.setenv("KAOS_CHARTS_DIR", str(charts_dir))
    monkeypatch.setenv("KAOS_RESYNC_SECONDS", "0.2")
    monkeypatch.setenv("KAOS_HELM_RETRY_SECONDS", "0.5")
    return kmock


@pytest.fixture
def start_operator(kube, monkeypatch):
    """Start the real kopf operator (all namespaces) with a recording helm backend."""

    @contextlib.asynccontextmanager
    async def start():
        backends: list[RecordingBackend] = []

        def make_backend(settings):
            backends.append(RecordingBackend(settings, str(kube.url)))
            return backends[-1]

        monkeypatch.setattr(handlers, "backend_factory", make_backend)
        monkeypatch.setattr(handlers, "tools_discoverer", loopback_only_discovery)
        settings = kopf.OperatorSettings()
        settings.scanning.disabled = True
        settings.watching.server_timeout = 10
        runner = KopfRunner(
            ["run", "--all-namespaces", "--standalone", "-m", "kaos.operator.handlers"],
            settings=settings,
            timeout=30,
        )
        with runner:
            await eventually(lambda: backends, timeout=10)
            yield Operator(runner, backends[0], Cluster(kube, NAMESPACE))

    return start


@pytest.fixture
async def operator(start_operator):
    async with start_operator() as running:
        yield running

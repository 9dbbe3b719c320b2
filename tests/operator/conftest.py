import os
import shutil

import kopf
import pytest
from kopf.testing import KopfRunner

import kaos.operator.handlers as handlers
from kaos.settings import Settings
from tests.operator.harness import (
    Cluster,
    RecordingBackend,
    VersionedKubernetes,
    declare_resources,
    eventually,
    kubeconfig_text,
)

REPO_CHARTS = Settings().charts_dir
HELM_DIR = os.path.join(os.path.dirname(__file__), "..", "..", ".tools", "bin")


@pytest.fixture(autouse=True)
def helm_on_path(monkeypatch):
    tools = os.path.abspath(HELM_DIR)
    if os.path.isdir(tools):
        monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
    if not shutil.which("helm"):
        pytest.skip("helm is not installed (run scripts/setup)")


@pytest.fixture
def kmock_options(kmock_options):
    return {**kmock_options, "cls": VersionedKubernetes}


@pytest.fixture
def charts_dir():
    """Where the operator finds its charts; a test may point it elsewhere before starting it."""
    return REPO_CHARTS


@pytest.fixture
async def operator(kmock, tmp_path, monkeypatch, charts_dir):
    """The real kopf operator (all namespaces) against kmock, with a recording helm backend."""
    declare_resources(kmock)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(kubeconfig_text(str(kmock.url)))
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    monkeypatch.setenv("KAOS_CHARTS_DIR", str(charts_dir))
    monkeypatch.setenv("KAOS_RESYNC_SECONDS", "0.2")
    monkeypatch.setenv("KAOS_HELM_RETRY_SECONDS", "0.5")
    backends: list[RecordingBackend] = []

    def make_backend(settings):
        backends.append(RecordingBackend(settings, str(kmock.url)))
        return backends[-1]

    monkeypatch.setattr(handlers, "backend_factory", make_backend)
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
        yield Operator(runner, backends[0], Cluster(kmock, "team"))


class Operator:
    def __init__(self, runner, backend, cluster):
        self.runner = runner
        self.helm = backend
        self.cluster = cluster

"""tests/realcluster: against the real single-node cluster of ``scripts/cluster up`` (real pods).

Skipped unless that cluster runs (``scripts/cluster status``); the tests start none themselves,
as starting one takes minutes. Each test works in a namespace of its own and deletes it.
"""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from kaos.local.ports import free_port
from tests.support.polling import wait_until
from tests.support.processes import kubectl_port_forward, stop_process

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class RealCluster:
    kubeconfig: str
    gateway_url: str

    @property
    def state(self) -> Path:
        """scripts/cluster's state folder (its kubeconfig lives there)."""
        return Path(self.kubeconfig).parent

    def api(self) -> httpx.Client:
        """A client of the apiserver with the admin's certificate: for polls faster than kubectl."""
        config = yaml.safe_load(Path(self.kubeconfig).read_text())
        cluster, user = config["clusters"][0]["cluster"], config["users"][0]["user"]
        context = ssl.create_default_context(cafile=cluster["certificate-authority"])
        context.load_cert_chain(user["client-certificate"], user["client-key"])
        return httpx.Client(base_url=cluster["server"], verify=context, timeout=10)

    def kubectl(self, *args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
        result = subprocess.run(["kubectl", "--kubeconfig", self.kubeconfig, *args], input=input,
                                capture_output=True, text=True, timeout=120)
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)}: {result.stderr.strip()}")
        return result

    def json(self, *args: str) -> Any:
        return json.loads(self.kubectl(*args, "-o", "json").stdout)

    def phases(self, namespace: str, resources: Iterable[tuple[str, str]]) -> dict[str, str]:
        """``kind/name``: the status.phase of each KAOS resource ("" before the operator wrote one)."""
        return {f"{kind}/{name}": (self.json("get", kind, name, "-n", namespace).get("status") or {}).get("phase", "")
                for kind, name in resources}

    def wait_ready(self, namespace: str, resources: Iterable[tuple[str, str]], timeout: float = 240) -> None:
        """Polls until every resource's phase is Ready; fails with the phases and the pods."""
        resources = list(resources)
        try:
            wait_until(lambda: set(self.phases(namespace, resources).values()) == {"Ready"},
                       timeout=timeout, interval=1, what=f"{len(resources)} resources Ready")
        except AssertionError:
            pods = self.kubectl("get", "pods", "-n", namespace, check=False).stdout
            raise AssertionError(f"{self.phases(namespace, resources)}\n{pods}") from None

    @contextmanager
    def port_forward(self, namespace: str, service: str, port: int) -> Iterator[int]:
        """``kubectl port-forward`` from a free port of 127.0.0.1 to ``port`` of a Service while
        the block runs; the local port."""
        local = free_port()
        process = kubectl_port_forward(namespace, service, local, port, self.kubeconfig)
        try:
            yield local
        finally:
            stop_process(process)

    def gateway_post(self, path: str, body: dict, timeout: float = 60) -> httpx.Response:
        """POSTs through the Gateway once its route and endpoints serve (404 and 5xx until then)."""
        def answer() -> httpx.Response | None:
            try:
                response = httpx.post(f"{self.gateway_url}{path}", json=body, timeout=120)
            except httpx.HTTPError:
                return None
            return response if response.status_code != 404 and response.status_code < 500 else None
        return wait_until(answer, timeout=timeout, interval=1, what=f"an answer through the Gateway at {path}")


def _status() -> dict[str, str] | None:
    result = subprocess.run([str(ROOT / "scripts" / "cluster"), "status"], capture_output=True, text=True)
    if result.returncode != 0:
        return None
    return dict(line.split("=", 1) for line in result.stdout.splitlines() if "=" in line)


@pytest.fixture(scope="session")
def real_cluster() -> RealCluster:
    status = _status()
    if status is None:
        pytest.skip("no cluster from scripts/cluster runs (start one with scripts/cluster up)")
    tools = ROOT / ".tools" / "bin"
    if tools.is_dir():
        os.environ["PATH"] = f"{tools}{os.pathsep}{os.environ['PATH']}"
    return RealCluster(status["KUBECONFIG"], status["GATEWAY_URL"])


@pytest.fixture
def namespace(real_cluster: RealCluster) -> str:
    name = f"rc-{uuid.uuid4().hex[:8]}"
    real_cluster.kubectl("create", "namespace", name)
    yield name
    real_cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)

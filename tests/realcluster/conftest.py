"""tests/realcluster: against the real single-node cluster of ``scripts/cluster up`` (real pods).

Skipped unless that cluster runs (``scripts/cluster status``); the tests start none themselves,
as starting one takes minutes. Each test works in a namespace of its own and deletes it.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class RealCluster:
    kubeconfig: str
    gateway_url: str

    def kubectl(self, *args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
        result = subprocess.run(["kubectl", "--kubeconfig", self.kubeconfig, *args], input=input,
                                capture_output=True, text=True, timeout=120)
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)}: {result.stderr.strip()}")
        return result

    def json(self, *args: str) -> Any:
        return json.loads(self.kubectl(*args, "-o", "json").stdout)


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

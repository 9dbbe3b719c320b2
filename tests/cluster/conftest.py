"""Fixtures of the cluster tier: one real control plane per test session, the platform chart
installed on it with Helm 4, and the operator running under the chart's ServiceAccount."""

from __future__ import annotations

import uuid

import pytest

from tests.cluster import controlplane
from tests.cluster.controlplane import STOP_TIMEOUT
from tests.cluster.platform import install_platform, start_operator


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/cluster/" in str(item.fspath):
            item.add_marker(pytest.mark.cluster)


@pytest.fixture(scope="session")
def cluster(tmp_path_factory):
    """Its folder (logs of every component and of the operator) is kept for the last three sessions.

    At the end every process started for it (the components and each operator process), and
    anything left in their process groups (helm run by an operator), must be gone, by pid."""
    plane = controlplane.start(tmp_path_factory.mktemp("cluster"), nodes=2)
    yield plane
    plane.stop()
    left = plane.wait_gone(STOP_TIMEOUT)
    assert left == [], f"processes left running after the control plane stopped: {left}"
    started = {component.name for component in plane.started}
    assert {"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"} <= started, started


@pytest.fixture(scope="session")
def platform(cluster):
    """The platform chart installed as release ``kaos`` in ``kaos-system`` (Helm 4, defaults plus
    NetworkPolicies, the gateway routes and the Redis for agents' memory); returns the operator Deployment."""
    cluster.install_gateway_api()
    return install_platform(cluster, "--set", "networkPolicy.enabled=true", "--set", "gateway.enabled=true",
                            "--set", "memory.redis.deploy=true")


@pytest.fixture(scope="session")
def operator(cluster, platform):
    process = start_operator(cluster)
    yield process
    process.stop()


@pytest.fixture
def namespace(cluster):
    name = f"t-{uuid.uuid4().hex[:8]}"
    cluster.kubectl("create", "namespace", name)
    return name


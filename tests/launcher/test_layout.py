"""The real cluster's places (tests/support/launcher/layout.py): the defaults scripts/cluster
always had, and the KAOS_CLUSTER_* and KAOS_CACHE variables that change them."""

from pathlib import Path

from tests.support.launcher.layout import Layout


def test_the_defaults():
    layout = Layout.from_env({"HOME": "/home/u"})
    assert layout.state == Path("/var/tmp/kaos-cluster")
    assert (layout.api_port, layout.registry_port, layout.gateway_port) == (16443, 15000, 18080)
    assert layout.cache == Path("/home/u/.cache/kaos") and layout.bin is None and layout.platform
    assert layout.exports() == ["KUBECONFIG=/var/tmp/kaos-cluster/kubeconfig", "GATEWAY_URL=http://127.0.0.1:18080"]
    assert layout.registry == "127.0.0.1:15000" and layout.mirror == "oci://10.244.0.1:15000/models"


def test_the_environment_changes_them():
    layout = Layout.from_env({"KAOS_CLUSTER_STATE": "/tmp/c", "KAOS_CLUSTER_API_PORT": "1", "KAOS_CACHE": "/c",
                              "KAOS_CLUSTER_REGISTRY_PORT": "2", "KAOS_CLUSTER_GATEWAY_PORT": "3",
                              "KAOS_CLUSTER_BIN": "/b", "KAOS_CLUSTER_PLATFORM": "0"})
    assert layout.external_api == "https://127.0.0.1:1" and layout.registry == "127.0.0.1:2"
    assert layout.mirror == "oci://10.244.0.1:2/models" and layout.gateway_url == "http://127.0.0.1:3"
    assert layout.registry_blobs == Path("/c/registry-blobs") and layout.bin == Path("/b") and not layout.platform
    assert layout.pid_file("kubelet") == Path("/tmp/c/pids/kubelet")
    assert layout.log_file("kubelet") == Path("/tmp/c/logs/kubelet.log")
    variables = layout.variables(Path("/b"))
    assert variables["STATE"] == "/tmp/c" and variables["REGISTRY"] == "127.0.0.1:2" and variables["BIN"] == "/b"

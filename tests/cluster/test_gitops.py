"""GitOps hygiene: rendering is deterministic, and a server-side diff after a sync is empty
(no perpetual drift from fields the apiserver defaults)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cluster.platform import CHARTS, apply_server_side, helm, wait_ready
from tests.cluster.test_reconcile import EXAMPLES, manifests

CHART_VALUES = [(chart.name, values) for chart in sorted(CHARTS.iterdir()) if (chart / "Chart.yaml").is_file()
                and "type: library" not in (chart / "Chart.yaml").read_text()
                for values in [None, *sorted((chart / "ci").glob("*.yaml"))]]


@pytest.mark.parametrize("chart,values", CHART_VALUES,
                         ids=[f"{c}-{v.stem if v else 'defaults'}" for c, v in CHART_VALUES])
def test_rendering_twice_gives_identical_output(cluster, chart: str, values: Path | None):
    args = ["template", "release-name", str(CHARTS / chart), "--namespace", "ns"]
    if values:
        args += ["-f", str(values)]
    first, second = helm(cluster, *args).stdout, helm(cluster, *args).stdout
    assert first and first == second


def test_server_side_diff_after_a_sync_is_empty(cluster, operator, namespace):
    apply_server_side(cluster, EXAMPLES / "quickstart", namespace)
    for item in manifests(EXAMPLES / "quickstart"):
        wait_ready(cluster, item["kind"], item["metadata"]["name"], namespace)
    diff = cluster.kubectl("diff", "--server-side", "--field-manager=argocd-controller", "-n", namespace,
                           "-f", str(EXAMPLES / "quickstart"), check=False)
    assert diff.returncode == 0 and diff.stdout == "", diff.stdout + diff.stderr


def test_platform_chart_synced_by_argo_cd_has_no_drift(cluster, platform):
    """Argo CD renders the chart (CRDs included) and applies it server-side with its own field manager."""
    cluster.kubectl("create", "namespace", "gitops")
    rendered = helm(cluster, "template", "gitops", str(CHARTS / "kaos"), "--namespace", "gitops", "--include-crds",
                    "--set", "watchNamespaces[0]=gitops").stdout
    args = ("--server-side", "--field-manager=argocd-controller", "--force-conflicts", "-n", "gitops", "-f", "-")
    cluster.kubectl("apply", *args, input=rendered)
    diff = cluster.kubectl("diff", *args, input=rendered, check=False)
    assert diff.returncode == 0 and diff.stdout == "", diff.stdout + diff.stderr

"""Reconcile counts and durations of the local control plane (kaos.metrics), served at
/_kaos/metrics by the `kaos up` ASGI app, parsed as Prometheus does."""

import httpx
from prometheus_client.parser import text_string_to_metric_families

from kaos.local.server import App
from kaos.metrics import reconciled, started
from tests.local.test_controlplane import MODELAPI, agent, phase
from tests.support.polling import eventually


def samples(text: str) -> dict:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


async def scrape(plane) -> dict:
    app = App(plane, 0, lambda: None, "token")
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://kaos") as client:
        response = await client.get("/_kaos/metrics")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    return samples(response.text)


async def test_reconciles_are_counted_by_kind_and_phase(control):  # noqa: F811
    before = await scrape(control)
    control.apply([(agent(), "a.yaml")])
    await eventually(lambda: phase(control, "Agent", "a") == "Waiting", timeout=30)
    control.apply([(MODELAPI, "m.yaml")])
    await eventually(lambda: phase(control, "Agent", "a") == "Ready", timeout=30)
    after = await scrape(control)

    def grew(name, **labels):
        key = (name, tuple(sorted(labels.items())))
        return after.get(key, 0) - before.get(key, 0)

    assert grew("kaos_reconcile_total", kind="Agent", result="Waiting") >= 1
    assert grew("kaos_reconcile_total", kind="Agent", result="Ready") >= 1
    assert grew("kaos_reconcile_total", kind="ModelAPI", result="Ready") >= 1
    assert grew("kaos_reconcile_duration_seconds_count", kind="Agent") >= 2
    assert grew("kaos_reconcile_duration_seconds_sum", kind="Agent") > 0


def test_reconciled_counts_one_and_times_it():
    from kaos.metrics import REGISTRY
    before = REGISTRY.get_sample_value("kaos_reconcile_total", {"kind": "MCPServer", "result": "Failed"}) or 0
    reconciled("MCPServer", "Failed", started())
    assert REGISTRY.get_sample_value("kaos_reconcile_total", {"kind": "MCPServer", "result": "Failed"}) == before + 1

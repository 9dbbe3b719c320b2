"""Helm failures land in status and are retried with backoff; fixing the cause recovers."""

import asyncio
import shutil

import pytest

from tests.operator.conftest import REPO_CHARTS
from tests.operator.test_lifecycle import ECHO, agent, assert_quiet, proxy_api
from tests.operator.test_main import wait_answering
from tests.support.polling import eventually
from tests.support.processes import free_port, spawn

BROKEN_TEMPLATE = '{{ fail "the agent chart is broken on purpose" }}\n'


@pytest.fixture
def charts_dir(tmp_path):
    copy = tmp_path / "charts"
    shutil.copytree(REPO_CHARTS, copy)
    (copy / "agent" / "templates" / "broken.yaml").write_text(BROKEN_TEMPLATE)
    return copy


async def test_helm_failure_is_reported_retried_with_backoff_and_recovers(operator, charts_dir):
    cluster, helm = operator.cluster, operator.helm
    await cluster.create("ModelAPI", "llm", proxy_api())
    await cluster.create("Agent", "solo", agent())

    failed = await eventually(
        lambda: "helm upgrade --install agent-solo failed" in cluster.status("Agent", "solo").get("message", "")
        and cluster.status("Agent", "solo")
    )
    assert failed["phase"] == "Failed" and failed["ready"] is False
    assert "the agent chart is broken on purpose" in failed["message"]
    assert "retrying in" in failed["message"]
    ready_condition = next(c for c in failed["conditions"] if c["type"] == "Ready")
    assert ready_condition["reason"] == "HelmFailed"

    # Backoff, not a hot loop: 0.5 s, then 1 s, 2 s, ... between attempts, while the resync
    # timer ticks every 0.2 s. Over 2 s that is at most 4 attempts (a hot loop would make 10+).
    first = helm.attempts.count("agent-solo")
    await asyncio.sleep(2.0)  # an observation window, not a synchronisation
    assert helm.attempts.count("agent-solo") - first <= 4

    (charts_dir / "agent" / "templates" / "broken.yaml").unlink()
    await eventually(lambda: cluster.status("Agent", "solo").get("ready"), timeout=20)
    assert helm.applied("agent-solo"), "the release was applied once the chart rendered"


async def test_external_mcp_server_is_ready_without_a_release_and_lists_its_tools(operator, tmp_path):
    cluster, helm = operator.cluster, operator.helm
    port = free_port()
    server = spawn("mcp", ["-m", "kaos_runtime", "mcp"], {"MCP_TOOLS_STRING": ECHO}, str(tmp_path), port=port)
    try:
        await wait_answering(server, "/health")
        url = f"http://127.0.0.1:{port}/mcp"
        await cluster.create("MCPServer", "remote", {"runtime": "custom", "url": url})
        ready = await eventually(lambda: cluster.status("MCPServer", "remote").get("tools") and cluster.status("MCPServer", "remote"))
    finally:
        server.stop()
    assert ready["phase"] == "Ready" and ready["endpoint"] == url
    assert ready["tools"] == ["echo"]
    assert helm.applied("mcpserver-remote") == []
    await assert_quiet(cluster, "MCPServer", "remote", resync_periods=3)


async def test_unreachable_mcp_server_is_ready_with_no_tools(operator):
    cluster = operator.cluster
    await cluster.create("MCPServer", "far", {"runtime": "custom", "url": "https://tools.example.com/mcp"})
    ready = await eventually(lambda: cluster.status("MCPServer", "far").get("ready") and cluster.status("MCPServer", "far"))
    assert ready["tools"] == []

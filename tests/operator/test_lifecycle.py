"""The operator through the API: finalizer, status transitions, helm releases, dependents."""

import asyncio

from tests.support.polling import eventually

NS = "team"
ECHO = "def echo(message: str) -> str:\n    \"\"\"Echo.\"\"\"\n    return message\n"


def proxy_api(models=("ollama/*",)):
    return {"mode": "Proxy", "proxyConfig": {"models": list(models), "apiBase": "http://ollama:11434"}}


def agent(model="ollama/smollm2:135m", access=(), mcp=(), **extra):
    spec = {"modelAPI": "llm", "model": model, "agentNetwork": {"access": list(access)}, "mcpServers": list(mcp)}
    spec.update(extra)
    return spec


async def test_coordinator_created_before_its_workers_gets_their_urls(operator):
    cluster, helm = operator.cluster, operator.helm
    await cluster.create("ModelAPI", "llm", proxy_api())
    await cluster.create("MCPServer", "tools", {"runtime": "python-string", "params": ECHO})
    await cluster.create("Agent", "coord", agent(access=["w1", "w2"], mcp=["tools"]))

    waiting = await eventually(
        lambda: "Agent w1 (not found)" in cluster.status("Agent", "coord").get("message", "")
        and cluster.status("Agent", "coord")
    )
    assert waiting["phase"] == "Waiting" and "Agent w2 (not found)" in waiting["message"]

    await cluster.create("Agent", "w1", agent())
    await cluster.create("Agent", "w2", agent())
    await eventually(lambda: cluster.status("Agent", "coord").get("ready"))

    values = helm.applied("agent-coord")[-1].values
    assert values["peers"] == [
        {"name": "w1", "url": f"http://agent-w1.{NS}.svc.cluster.local:8000"},
        {"name": "w2", "url": f"http://agent-w2.{NS}.svc.cluster.local:8000"},
    ]
    assert values["mcpServers"] == [{"name": "tools", "url": f"http://mcpserver-tools.{NS}.svc.cluster.local:8000/mcp"}]
    deployment = next(o for o in helm.applied("agent-coord")[-1].objects if o["kind"] == "Deployment")
    env = {e["name"]: e.get("value") for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["PEER_AGENTS"] == "w1,w2"

    # A peer going away sends the coordinator back to Waiting; its release is left running.
    await cluster.delete("Agent", "w2")
    await eventually(lambda: helm.uninstalled("agent-w2") and cluster.get("Agent", "w2") is None)
    back = await eventually(lambda: cluster.status("Agent", "coord").get("phase") == "Waiting" and cluster.status("Agent", "coord"))
    assert "Agent w2 (not found)" in back["message"]


async def test_model_not_offered_fails_without_hot_loop_and_a_fix_recovers(operator):
    cluster, helm = operator.cluster, operator.helm
    await cluster.create("ModelAPI", "llm", proxy_api(models=["ollama/*"]))
    await cluster.create("Agent", "typo", agent(model="openai/gpt-4o"))

    failed = await eventually(lambda: cluster.status("Agent", "typo").get("phase") == "Failed" and cluster.status("Agent", "typo"))
    assert "'openai/gpt-4o'" in failed["message"] and "ollama/*" in failed["message"]
    assert helm.applied("agent-typo") == []

    await eventually(lambda: cluster.status("ModelAPI", "llm").get("ready"))
    await assert_quiet(cluster, "Agent", "typo", resync_periods=5)

    await cluster.patch_spec("Agent", "typo", {"model": "ollama/smollm2:135m"})
    await eventually(lambda: cluster.status("Agent", "typo").get("ready"))
    assert helm.applied("agent-typo")[-1].values["model"] == "ollama/smollm2:135m"


async def test_invalid_spec_is_failed_with_the_schema_message(operator):
    cluster = operator.cluster
    await cluster.create("MCPServer", "bad", {"runtime": "Not_A_Name"})
    failed = await eventually(lambda: cluster.status("MCPServer", "bad").get("phase") == "Failed" and cluster.status("MCPServer", "bad"))
    assert "runtime" in failed["message"]


async def assert_quiet(cluster, kind, name, resync_periods):
    """Once kopf has recorded the handled spec, no write to the object while several resync
    periods (0.2 s each) pass."""
    await eventually(
        lambda: "kaos.tools/last-handled-configuration" in (cluster.get(kind, name)["metadata"].get("annotations") or {})
    )
    history = cluster.kmock.objects[cluster.key(kind, name)].history
    before = len(history)
    await asyncio.sleep(0.2 * resync_periods)  # an observation window, not a synchronisation
    assert len(cluster.kmock.objects[cluster.key(kind, name)].history) == before

import pytest

from kaos.reconcile import Ref, plan, status
from kaos.settings import Settings
from tests.reconcile.builders import NS, agent, endpoint_of, mcpserver, modelapi

SETTINGS = Settings()


def conditions(result):
    return {c["type"]: c["status"] for c in result["conditions"]}


@pytest.mark.parametrize(
    "observed, ready_replicas, replicas, phase, ready",
    [
        ({}, None, None, "Waiting", False),
        ({Ref("ModelAPI", NS, "llm"): modelapi()}, None, None, "Pending", False),
        ({Ref("ModelAPI", NS, "llm"): modelapi()}, 0, 1, "Pending", False),
        ({Ref("ModelAPI", NS, "llm"): modelapi()}, 1, 1, "Ready", True),
        ({Ref("ModelAPI", NS, "llm"): modelapi(models=["openai/*"])}, 1, 1, "Failed", False),
    ],
)
def test_status_phases(observed, ready_replicas, replicas, phase, ready):
    resource = agent()
    resource["metadata"]["generation"] = 7
    result = status(resource, plan(resource, observed, SETTINGS, endpoint_of), ready_replicas, replicas)
    assert result["phase"] == phase and result["ready"] is ready
    assert result["observedGeneration"] == 7
    assert result["endpoint"] == "http://agent-coord.team:8000"
    assert result["replicas"] == (replicas or 0) and result["readyReplicas"] == (ready_replicas or 0)
    assert conditions(result)["Ready"] == ("True" if ready else "False")
    assert conditions(result)["DependenciesReady"] == ("False" if phase == "Waiting" else "True")
    if phase in ("Waiting", "Failed", "Pending"):
        assert result["message"]


def test_external_mcp_server_is_ready_without_replicas():
    resource = mcpserver(url="http://elsewhere/mcp")
    result = status(resource, plan(resource, {}, SETTINGS, endpoint_of), None, None)
    assert result["phase"] == "Ready" and result["endpoint"] == "http://elsewhere/mcp"


def test_scaled_to_zero_agent_is_ready():
    resource = agent(replicas=0)
    observed = {Ref("ModelAPI", NS, "llm"): modelapi()}
    result = status(resource, plan(resource, observed, SETTINGS, endpoint_of), 0, 0)
    assert result["phase"] == "Ready"

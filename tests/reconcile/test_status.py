import pytest

from kaos.reconcile import Ref, failed, plan, status
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


def test_failed_marks_the_status_and_its_ready_condition_and_keeps_the_rest():
    resource = agent()
    ready = status(resource, plan(resource, {Ref("ModelAPI", NS, "llm"): modelapi()}, SETTINGS, endpoint_of), 1, 1)
    result = failed(ready, "helm upgrade failed", reason="HelmFailed")
    assert result["phase"] == "Failed" and result["ready"] is False and result["message"] == "helm upgrade failed"
    condition = {c["type"]: c for c in result["conditions"]}
    assert condition["Ready"] == {"type": "Ready", "status": "False", "reason": "HelmFailed",
                                  "message": "helm upgrade failed"}
    assert condition["DependenciesReady"]["status"] == "True"
    assert result["endpoint"] == ready["endpoint"] and result["readyReplicas"] == 1
    assert ready["phase"] == "Ready", "the status given is left as it was"
    assert failed(ready, "m")["conditions"][0]["reason"] == "Failed"

"""What the control plane alone decides, on every backend (no running container needed):
semantic validation, the status it writes, edits and deletion."""

import pytest

from e2e.conftest import (
    BACKEND,
    create_agent_resource,
    create_custom_resource,
    delete_custom_resource,
    deploy_and_wait,
    get_custom_resource,
    wait_for_status,
)
from tests.support.polling import wait_until

pytestmark = pytest.mark.e2e


def test_a_model_the_modelapi_does_not_offer_is_failed_with_the_supported_list(test_namespace, narrow_modelapi):
    create_custom_resource(create_agent_resource(test_namespace, "wrong-model", narrow_modelapi,
                                                 model="gpt-not-offered"), test_namespace)
    status = wait_for_status("Agent", "wrong-model", test_namespace, "Failed", timeout=60)["status"]
    assert "gpt-not-offered" in status["message"] and narrow_modelapi in status["message"]
    assert status["ready"] is False
    assert {c["type"]: c["status"] for c in status["conditions"]}["Ready"] == "False"


def test_ready_status_has_endpoint_conditions_and_generation(test_namespace, shared_modelapi):
    deploy_and_wait(create_agent_resource(test_namespace, "status-agent", shared_modelapi), test_namespace)
    agent = wait_for_status("Agent", "status-agent", test_namespace, "Ready")
    status = agent["status"]
    if BACKEND == "cluster":
        assert status["endpoint"] == f"http://agent-status-agent.{test_namespace}.svc.cluster.local:8000"
    else:
        assert status["endpoint"].startswith("http://127.0.0.1:")
    assert {c["type"]: c["status"] for c in status["conditions"]} == {"Ready": "True", "DependenciesReady": "True"}
    assert status["observedGeneration"] == agent["metadata"]["generation"]
    assert status["readyReplicas"] == status["replicas"] == 1


def test_an_edit_is_observed_and_a_delete_removes_the_resource(test_namespace, shared_modelapi):
    resource = create_agent_resource(test_namespace, "edited-agent", shared_modelapi)
    deploy_and_wait(resource, test_namespace)
    first = wait_for_status("Agent", "edited-agent", test_namespace, "Ready")["metadata"]["generation"]
    resource["spec"]["config"]["instructions"] = "Answer in one word."
    create_custom_resource(resource, test_namespace)

    def observed_edit():
        agent = get_custom_resource("Agent", "edited-agent", test_namespace) or {}
        status = agent.get("status") or {}
        generation = agent.get("metadata", {}).get("generation")
        return generation > first and status.get("observedGeneration") == generation and status.get("phase") == "Ready"

    wait_until(observed_edit, 60, interval=0.2, what="the edit observed and Ready")
    delete_custom_resource("Agent", "edited-agent", test_namespace)
    wait_until(lambda: get_custom_resource("Agent", "edited-agent", test_namespace) is None, 60, interval=0.2,
               what="the agent deleted")

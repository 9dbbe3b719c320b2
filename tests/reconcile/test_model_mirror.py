"""The platform's model mirror (issue 30): which engine and reference a Hosted ModelAPI gets, and
what a wrong mirror or model name says."""

import pytest

from kaos.model_mirror import missing_message, parse_registry, split_model
from kaos.reconcile import Ref, cluster_endpoint_of, plan
from kaos.settings import Settings, SettingsError
from tests.reconcile.builders import endpoint_of, stored

MIRRORED = Settings(hosted_registry="oci://10.244.0.1:15000/models", hosted_registry_insecure=True)


def hosted(**config):
    return stored("ModelAPI", "llm", {"mode": "Hosted", "hostedConfig": config}, True)


def test_with_a_mirror_upstreams_shape_runs_ollama_fetching_from_the_mirror():
    resource = hosted(model="smollm2:135m")
    known = {Ref("ModelAPI", resource["metadata"]["namespace"], "llm"): resource}
    result = plan(resource, {}, MIRRORED, cluster_endpoint_of(MIRRORED, known))
    assert result.phase == "Deploy", result.message
    values = result.values["hosted"]
    assert values["engine"] == "ollama" and values["model"] == "smollm2:135m"
    assert values["mirror"] == {"registry": "oci://10.244.0.1:15000/models",
                                "reference": "10.244.0.1:15000/models/smollm2:135m", "insecure": True, "secretName": "",
                                "fetchImage": {"repository": "python", "tag": "3.12-slim", "pullPolicy": "IfNotPresent"}}
    assert result.endpoint.endswith(":11434")  # upstream's shape: Ollama's port


def test_without_a_mirror_nothing_changes():
    result = plan(hosted(model="smollm2:135m"), {}, Settings(), endpoint_of)
    assert result.values["hosted"]["engine"] == "llamacpp" and "mirror" not in result.values["hosted"]
    result = plan(hosted(model="llama3.2", engine="ollama"), {}, Settings(), endpoint_of)
    assert "mirror" not in result.values["hosted"]


def test_a_gguf_on_the_node_or_engine_llamacpp_keeps_its_source():
    result = plan(hosted(model="smollm2:135m", engine="ollama", gguf={"path": "/srv/m.gguf"}), {}, MIRRORED, endpoint_of)
    assert "mirror" not in result.values["hosted"] and result.values["hosted"]["gguf"]["path"] == "/srv/m.gguf"
    result = plan(hosted(model="smollm2:135m", engine="llamacpp"), {}, MIRRORED, endpoint_of)
    assert result.values["hosted"]["engine"] == "llamacpp" and "mirror" not in result.values["hosted"]


def test_a_model_the_mirror_cannot_hold_is_failed_naming_the_mirror():
    result = plan(hosted(model="hf.co/someone/model:Q4"), {}, MIRRORED, endpoint_of)
    assert result.phase == "Failed"
    assert "hf.co/someone/model:Q4" in result.message and "oci://10.244.0.1:15000/models" in result.message


@pytest.mark.parametrize("value", ["http://host/models", "oci://host", "oci://host/a/b", "oci://host/a.b", "host/models"])
def test_a_wrong_mirror_is_refused_naming_the_variable(value):
    with pytest.raises(SettingsError, match="KAOS_HOSTED_REGISTRY"):
        Settings.from_env({"KAOS_HOSTED_REGISTRY": value})


def test_references_and_the_message():
    registry = parse_registry("oci://registry.internal:5000/models/")
    assert registry.reference("smollm2:135m") == "registry.internal:5000/models/smollm2:135m"
    assert registry.reference("llama3.2") == "registry.internal:5000/models/llama3.2:latest"
    assert registry.manifest_path("smollm2:135m") == "/v2/models/smollm2/manifests/135m"
    assert split_model("a_b-c.d:1.0-x") == ("a_b-c.d", "1.0-x")
    message = missing_message("smollm2:135m", registry, "GET ... answered 404")
    assert "smollm2:135m" in message and "oci://registry.internal:5000/models" in message
    assert "kaos models push smollm2:135m --from" in message and "--to oci://registry.internal:5000/models" in message

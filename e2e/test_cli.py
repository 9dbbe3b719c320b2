"""The `kaos` CLI against the session's control plane, and its clear errors (local backend only)."""

import json
import os
import shutil
import subprocess
import sys

import httpx
import pytest
import yaml

from e2e.conftest import BACKEND, backend, create_agent_resource, deploy_and_wait, gateway_url, wait_for_status
from kaos.api import AGENT, API_VERSION

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(BACKEND != "local", reason="the CLI drives the local control plane")]


def kaos(*args: str, home=None, input: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "KAOS_HOME": str(home or backend().home)}
    return subprocess.run([sys.executable, "-m", "kaos.cli", *args], capture_output=True, text=True,
                          env=env, input=input, timeout=120)


@pytest.fixture(scope="module")
def cli_agent(test_namespace, shared_modelapi) -> str:
    deploy_and_wait(create_agent_resource(test_namespace, "cli-agent", shared_modelapi,
                                          mock_responses=["Hi from the CLI agent."] * 5), test_namespace)
    return "cli-agent"


def test_get_lists_agents_as_a_table_and_as_json(test_namespace, cli_agent):
    table = kaos("get", "agents", "-n", test_namespace)
    assert table.returncode == 0, table.stderr
    header, *rows = table.stdout.splitlines()
    assert header.split() == ["NAME", "MODEL", "READY", "PHASE", "ENDPOINT"]
    row = next(r.split() for r in rows if r.startswith("cli-agent "))
    assert row[2:4] == ["true", "Ready"] and row[4].startswith("http://127.0.0.1:")
    listed = json.loads(kaos("get", "agents", "-n", test_namespace, "-o", "json").stdout)
    assert "cli-agent" in [item["metadata"]["name"] for item in listed["items"]]
    assert yaml.safe_load(kaos("get", "modelapis", "-n", test_namespace, "-o", "yaml").stdout)["items"]


def test_chat_one_shot_and_streaming(test_namespace, cli_agent):
    plain = kaos("chat", cli_agent, "-n", test_namespace, "Hello?")
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.strip() == "Hi from the CLI agent."
    streamed = kaos("chat", cli_agent, "-n", test_namespace, "Hello?", "--stream")
    assert streamed.stdout.strip() == "Hi from the CLI agent."
    interactive = kaos("chat", cli_agent, "-n", test_namespace, input="Hello?\n\n")
    assert "Hi from the CLI agent." in interactive.stdout


def test_logs_show_the_process_output(test_namespace, cli_agent):
    logs = kaos("logs", cli_agent, "-n", test_namespace)
    assert logs.returncode == 0, logs.stderr
    assert "kaos-runtime agent" in logs.stdout


def test_apply_and_delete_from_a_file(test_namespace, shared_modelapi, tmp_path):
    manifest = create_agent_resource(test_namespace, "cli-applied", shared_modelapi)
    path = tmp_path / "agent.yaml"
    path.write_text(yaml.safe_dump(manifest))
    applied = kaos("apply", "-f", str(path))
    assert applied.returncode == 0, applied.stderr
    assert f"Agent {test_namespace}/cli-applied created" in applied.stdout
    wait_for_status("Agent", "cli-applied", test_namespace, "Ready")
    deleted = kaos("delete", "-f", str(path))
    assert deleted.returncode == 0, deleted.stderr
    response = httpx.get(gateway_url(test_namespace, "agent", "cli-applied") + "/health")
    assert response.status_code == 404
    assert "cli-applied" in response.json()["detail"]


def test_schema_error_names_the_file_and_the_field(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": API_VERSION, "kind": AGENT, "metadata": {"name": "x"},
                                    "spec": {"modelAPI": "llm", "config": {"reasoningLoopMaxSteps": 50}}}))
    result = kaos("apply", "-f", str(path))
    assert result.returncode == 1
    assert str(path) in result.stderr and "reasoningLoopMaxSteps" in result.stderr
    assert "Traceback" not in result.stderr


def test_unknown_names_are_clear_errors(test_namespace):
    deleted = kaos("delete", "agent", "no-such-agent", "-n", test_namespace)
    assert deleted.returncode == 1 and "no-such-agent" in deleted.stderr and "not found" in deleted.stderr
    chat = kaos("chat", "no-such-agent", "-n", test_namespace, "hi")
    assert chat.returncode == 1 and "not found" in chat.stderr
    logs = kaos("logs", "no-such-agent", "-n", test_namespace)
    assert logs.returncode == 1 and "no-such-agent" in logs.stderr
    kind = kaos("get", "pods")
    assert kind.returncode == 1 and "unknown resource type" in kind.stderr


def test_no_control_plane_and_port_in_use(tmp_path):
    result = kaos("get", "agents", home=tmp_path / "empty")
    assert result.returncode == 1 and "no local control plane is running" in result.stderr
    busy = kaos("up", "--port", str(backend().port), home=tmp_path / "other")
    assert busy.returncode == 1 and f"port {backend().port}" in busy.stderr and "in use" in busy.stderr
    again = kaos("up", "--port", "1")
    assert again.returncode == 1 and "already running" in again.stderr


def test_gateway_answers_json_404_and_503(test_namespace, narrow_modelapi):
    assert httpx.get(f"{backend().gateway}/not-a-route").status_code == 404
    unknown = httpx.get(gateway_url(test_namespace, "mcp", "nothing-here") + "/mcp")
    assert unknown.status_code == 404 and unknown.headers["content-type"] == "application/json"
    # an agent whose model the ModelAPI does not offer never runs: its route is 503 with the reason
    create = create_agent_resource(test_namespace, "unrunnable", narrow_modelapi, model="not-offered")
    backend().apply(create)
    wait_for_status("Agent", "unrunnable", test_namespace, "Failed")
    down = httpx.get(gateway_url(test_namespace, "agent", "unrunnable") + "/health")
    assert down.status_code == 503
    assert "not-offered" in down.json()["detail"]


@pytest.mark.skipif(shutil.which("ollama") is not None, reason="ollama is installed here")
def test_hosted_modelapi_without_ollama_is_failed(test_namespace):
    from e2e.conftest import create_modelapi_hosted_resource

    resource = create_modelapi_hosted_resource(test_namespace, "hosted")
    resource["spec"]["hostedConfig"]["engine"] = "ollama"  # unnamed, smollm2:135m runs on llama.cpp (tests/realmodel)
    backend().apply(resource)
    status = wait_for_status("ModelAPI", "hosted", test_namespace, "Failed")["status"]
    assert "ollama" in status["message"]

"""The control plane with the real reconcile core and real `helm template`, running a tiny
stand-in program in place of the runtime and LiteLLM (an HTTP server on $PORT), so that
ordering, rolling, deleting and restarting are checked in a second or two."""

import os
import re
import signal
import sys

import httpx
import pytest

from kaos.api import API_VERSION
from kaos.local.manifests import ApplyError
from kaos.local.store import validate_documents
from kaos.reconcile import Ref
from kaos.settings import Settings
from tests.support.polling import eventually
from tests.support.processes import alive

CRDS = Settings().crd_dir
MODELAPI = {"apiVersion": API_VERSION, "kind": "ModelAPI", "metadata": {"name": "llm"},
            "spec": {"mode": "Proxy", "proxyConfig": {"models": ["m"]}}}


def agent(name="a", **spec):
    return {"apiVersion": API_VERSION, "kind": "Agent", "metadata": {"name": name},
            "spec": {"modelAPI": "llm", "model": "m", **spec}}


def phase(plane, kind, name):
    return (plane.store.resources.get(Ref(kind, "default", name), {}).get("status") or {}).get("phase")


def info(plane, kind, name) -> dict:
    port = plane.workloads.ports[Ref(kind, "default", name)]
    return httpx.get(f"http://127.0.0.1:{port}/").json()


def pid_of(plane, kind, name) -> int | None:
    """The pid answering on the workload's port; None while no process listens there."""
    try:
        return info(plane, kind, name)["pid"]
    except httpx.ConnectError:
        return None


async def test_agent_waits_for_its_modelapi_then_runs_with_its_url(control):
    control.apply([(agent(), "a.yaml")])
    await eventually(lambda: phase(control, "Agent", "a") == "Waiting", timeout=30)
    assert "ModelAPI llm (not found)" in control.store.resources[Ref("Agent", "default", "a")]["status"]["message"]
    control.apply([(MODELAPI, "m.yaml")])
    await eventually(lambda: phase(control, "Agent", "a") == "Ready", timeout=30)
    assert phase(control, "ModelAPI", "llm") == "Ready"
    env = info(control, "Agent", "a")["env"]
    assert env["MODEL_API_URL"] == control.workloads.endpoint_of("ModelAPI", "default", "llm")
    assert env["HOST"] == "127.0.0.1"
    assert env["PORT"] == str(control.workloads.ports[Ref("Agent", "default", "a")])
    litellm = info(control, "ModelAPI", "llm")
    config = litellm["argv"][litellm["argv"].index("--config") + 1]
    assert config.startswith(str(control.home / "volumes"))
    assert "model_name: m" in open(config).read()


async def test_changed_manifest_rolls_the_process_unchanged_does_not(control):
    control.apply([(MODELAPI, "m.yaml"), (agent(), "a.yaml")])
    await eventually(lambda: phase(control, "Agent", "a") == "Ready", timeout=30)
    first = info(control, "Agent", "a")["pid"]
    assert control.apply([(agent(), "a.yaml")])[0]["result"] == "unchanged"
    await control.settled()
    assert info(control, "Agent", "a")["pid"] == first
    changed = agent(config={"instructions": "Be terse."})
    assert control.apply([(changed, "a.yaml")])[0]["result"] == "configured"
    await eventually(lambda: pid_of(control, "Agent", "a") not in (None, first), timeout=30)
    await eventually(lambda: phase(control, "Agent", "a") == "Ready", timeout=30)
    assert info(control, "Agent", "a")["env"]["AGENT_INSTRUCTIONS"] == "Be terse."
    assert control.store.resources[Ref("Agent", "default", "a")]["metadata"]["generation"] == 2


async def test_delete_stops_the_process(control):
    control.apply([(MODELAPI, "m.yaml")])
    await eventually(lambda: phase(control, "ModelAPI", "llm") == "Ready", timeout=30)
    pid = info(control, "ModelAPI", "llm")["pid"]
    assert control.delete(Ref("ModelAPI", "default", "llm"))
    await control.settled()
    await eventually(lambda: not alive(pid), timeout=30)
    assert control.deployments() == []
    assert not control.delete(Ref("ModelAPI", "default", "llm"))


async def test_crashed_process_is_restarted(control):
    control.apply([(MODELAPI, "m.yaml")])
    await eventually(lambda: phase(control, "ModelAPI", "llm") == "Ready", timeout=30)
    pid = info(control, "ModelAPI", "llm")["pid"]
    os.kill(pid, signal.SIGKILL)
    await eventually(lambda: phase(control, "ModelAPI", "llm") == "Ready" and control.deployments()[0]["restarts"] == 1, timeout=30)
    assert info(control, "ModelAPI", "llm")["pid"] != pid
    # Ready again, the status still says it restarted (docs/local.md, "Restarts"), and why
    message = control.store.resources[Ref("ModelAPI", "default", "llm")]["status"]["message"]
    assert "restarted 1 time(s)" in message and "exit code -9" in message, message


async def test_dependents_follow_their_dependency(control):
    control.apply([(MODELAPI, "m.yaml"), (agent(), "a.yaml")])
    await eventually(lambda: phase(control, "Agent", "a") == "Ready", timeout=30)
    control.apply([(agent("b", agentNetwork={"access": ["a"]}), "b.yaml")])
    await eventually(lambda: phase(control, "Agent", "b") == "Ready", timeout=30)
    assert info(control, "Agent", "b")["env"]["PEER_AGENTS"] == "a"
    control.delete(Ref("Agent", "default", "a"))
    await eventually(lambda: phase(control, "Agent", "b") == "Waiting", timeout=30)


async def test_model_not_offered_fails_with_the_core_message(control):
    control.apply([(MODELAPI, "m.yaml"), (agent(model="other"), "a.yaml")])
    await eventually(lambda: phase(control, "Agent", "a") == "Failed", timeout=30)
    assert "'other'" in control.store.resources[Ref("Agent", "default", "a")]["status"]["message"]


async def test_hosted_modelapi_without_ollama_is_failed(control, monkeypatch):
    control.workloads.which = lambda name: None if name == "ollama" else "/bin/true"
    # engine ollama named: without it smollm2:135m runs on llama.cpp (tests/realmodel)
    hosted = {**MODELAPI, "spec": {"mode": "Hosted", "hostedConfig": {"model": "smollm2:135m", "engine": "ollama"}}}
    control.apply([(hosted, "h.yaml")])
    await eventually(lambda: phase(control, "ModelAPI", "llm") == "Failed", timeout=30)
    assert "ollama" in control.store.resources[Ref("ModelAPI", "default", "llm")]["status"]["message"]


def test_invalid_manifest_names_the_file_and_the_field():
    bad = agent(config={"reasoningLoopMaxSteps": 99})
    with pytest.raises(ApplyError, match=r"bad\.yaml: .*reasoningLoopMaxSteps"):
        validate_documents([(MODELAPI, "good.yaml"), (bad, "bad.yaml")], CRDS)
    with pytest.raises(ApplyError, match=r"x\.yaml: kind 'Pod' is not supported"):
        validate_documents([({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}, "x.yaml")], CRDS)


@pytest.mark.parametrize("namespace", ["../../out/x", "UPPER_ns"])
async def test_a_namespace_that_is_no_rfc1123_label_is_refused_before_any_path_is_built(control, tmp_path, namespace):
    tools = {"apiVersion": API_VERSION, "kind": "MCPServer", "metadata": {"name": "tools", "namespace": namespace},
             "spec": {"runtime": "python-string", "params": "def echo(message: str) -> str:\n    return message\n"}}
    with pytest.raises(ApplyError, match=rf"evil\.yaml: MCPServer .*: metadata\.namespace: '{re.escape(namespace)}' "
                                         "is not an RFC 1123 label: at most 63 characters"):
        control.apply([(MODELAPI, "good.yaml"), (tools, "evil.yaml")])
    await control.settled()
    assert control.list() == [] and control.deployments() == []
    assert not (tmp_path / "out").exists()


async def test_trigger_run_and_delete_by_a_name_no_resource_can_have(control):
    answer = await control.run_trigger("../x", "nightly")
    assert answer.status == 400
    assert "metadata.namespace: '../x' is not an RFC 1123 label" in answer.body["detail"]
    assert (await control.run_trigger("default", "Nightly")).status == 400
    assert control.delete(Ref("Agent", "../../x", "a")) is False


def test_a_resource_given_twice_is_refused_naming_both_sources():
    with pytest.raises(ApplyError, match=r"Agent default/a is given twice in one apply, in a\.yaml and in b\.yaml"):
        validate_documents([(agent(), "a.yaml"), (MODELAPI, "m.yaml"), (agent(), "b.yaml")], CRDS)
    with pytest.raises(ApplyError, match=r"in <request> \(document 1 of the apply\) and in <request> \(document 3"):
        validate_documents([(agent(), "<request>"), (MODELAPI, "<request>"), (agent(), "<request>")], CRDS)
    # the same name in another namespace, or of another kind, is another resource
    other = {**agent(), "metadata": {"name": "a", "namespace": "other"}}
    assert len(validate_documents([(agent(), "a.yaml"), (other, "b.yaml"), (agent_modelapi("a"), "c.yaml")], CRDS)) == 3


def agent_modelapi(name: str) -> dict:
    return {**MODELAPI, "metadata": {"name": name}}


def test_secret_and_configmap_names_are_rfc1123_subdomains():
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "api.keys"}, "stringData": {"k": "v"}}
    assert validate_documents([(secret, "s.yaml")], CRDS)
    for name in ("../keys", "Keys", "a/b"):
        with pytest.raises(ApplyError, match=rf"metadata\.name: '{re.escape(name)}' is not an RFC 1123 subdomain"):
            validate_documents([({**secret, "metadata": {"name": name}}, "s.yaml")], CRDS)


def test_validation_orders_dependencies_first():
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "stringData": {"k": "v"}}
    kinds = [d["kind"] for d, _ in validate_documents([(agent(), "a"), (MODELAPI, "m"), (secret, "s")], CRDS)]
    assert kinds == ["Secret", "ModelAPI", "Agent"]


async def test_crash_loop_is_failed_with_a_message_and_still_restarted(control, tmp_path):
    crasher = tmp_path / "crasher"
    crasher.write_text(f"#!{sys.executable}\nimport sys\nprint('cannot start: missing setting')\nsys.exit(3)\n")
    crasher.chmod(0o755)
    control.workloads.which = lambda name: str(crasher)
    control.apply([(MODELAPI, "m.yaml")])
    await eventually(lambda: phase(control, "ModelAPI", "llm") == "Failed", timeout=60)
    message = control.store.resources[Ref("ModelAPI", "default", "llm")]["status"]["message"]
    assert "crash loop" in message and "exit code 3" in message
    log = control.deployments()[0]["log"]
    assert "cannot start: missing setting" in open(log).read()

"""Rendered container -> local process: env, $(VAR) expansion, image mapping, volumes, probes."""

import base64

import pytest

from kaos.local.containers import (
    CannotRunLocally,
    expand,
    image_repository,
    local_process,
    mounted_files,
    program_for,
    readiness_path,
    resolve_env,
    rewrite_mount_arg,
    rewrite_mount_path,
)

INSTALLED = {"kaos-runtime": "/venv/bin/kaos-runtime", "litellm": "/venv/bin/litellm"}


def which(program):
    return INSTALLED.get(program)


def with_ollama(program):
    return {**INSTALLED, "ollama": "/usr/local/bin/ollama"}.get(program)


@pytest.mark.parametrize("text, expected", [
    ("--port $(PORT)", "--port 8123"),
    ("$(HOST):$(PORT)", "127.0.0.1:8123"),
    ("$(UNKNOWN) stays", "$(UNKNOWN) stays"),
    ("$$(PORT) is escaped", "$(PORT) is escaped"),
    ("$PORT is not kubernetes syntax", "$PORT is not kubernetes syntax"),
    ("cost $$5", "cost $5"),
])
def test_expand_follows_the_kubelet(text, expected):
    assert expand(text, {"PORT": "8123", "HOST": "127.0.0.1"}) == expected


def test_env_resolves_in_order_with_refs_and_overrides():
    objects = {
        ("Secret", "keys"): {"kind": "Secret", "data": {"token": base64.b64encode(b"s3cret").decode()}},
        ("ConfigMap", "cfg"): {"kind": "ConfigMap", "data": {"level": "DEBUG"}},
    }
    env = resolve_env([
        {"name": "PORT", "value": "8000"},
        {"name": "URL", "value": "http://$(HOST):$(PORT)/x"},
        {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "keys", "key": "token"}}},
        {"name": "LEVEL", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "level"}}},
        {"name": "LATER", "value": "$(TOKEN)-$(NOT_YET)"},
        {"name": "NOT_YET", "value": "x"},
        {"name": "OPTIONAL", "valueFrom": {"secretKeyRef": {"name": "absent", "key": "k", "optional": True}}},
    ], objects, {"HOST": "127.0.0.1", "PORT": "9001"})
    assert env["PORT"] == "9001"
    assert env["URL"] == "http://127.0.0.1:9001/x"  # overrides are defined before the list is read
    assert env["TOKEN"] == "s3cret"
    assert env["LEVEL"] == "DEBUG"
    assert env["LATER"] == "s3cret-$(NOT_YET)"
    assert "OPTIONAL" not in env
    assert env["HOST"] == "127.0.0.1"


def test_missing_secret_is_a_clear_error():
    with pytest.raises(CannotRunLocally, match="env KEY: Secret 'nope' not found"):
        resolve_env([{"name": "KEY", "valueFrom": {"secretKeyRef": {"name": "nope", "key": "k"}}}], {}, {})


@pytest.mark.parametrize("image, expected", [
    ("ghcr.io/berriai/litellm:main-v1.106.2", "ghcr.io/berriai/litellm"),
    ("ollama/ollama:0.12.6", "ollama/ollama"),
    ("localhost:5000/kaos-runtime:1", "localhost:5000/kaos-runtime"),
    ("ghcr.io/x/y@sha256:abc", "ghcr.io/x/y"),
])
def test_image_repository(image, expected):
    assert image_repository(image) == expected


def test_runtime_image_runs_the_runtime_from_the_venv():
    argv = program_for("ghcr.io/kaos-tools/kaos-runtime:0.1.0", ["kaos-runtime", "agent"], [], which)
    assert argv == ["/venv/bin/kaos-runtime", "agent"]
    assert program_for("example.org/mine:1", ["kaos-runtime", "mcp"], [], which) == ["/venv/bin/kaos-runtime", "mcp"]


def test_litellm_image_runs_the_litellm_cli_with_the_container_args():
    args = ["--config", "/etc/litellm/config.yaml", "--port", "8123"]
    assert program_for("ghcr.io/berriai/litellm:main-v1.106.2", ["litellm"], args, which) == ["/venv/bin/litellm", *args]
    assert program_for("ghcr.io/berriai/litellm:main", [], args, which) == ["/venv/bin/litellm", *args]


def test_ollama_image_needs_ollama_installed():
    with pytest.raises(CannotRunLocally, match="`ollama` program, which is not installed"):
        program_for("ollama/ollama:0.12.6", ["ollama", "serve"], [], which)
    assert program_for("ollama/ollama:0.12.6", ["ollama", "serve"], [], with_ollama) == ["/usr/local/bin/ollama", "serve"]
    assert program_for("docker.io/ollama/ollama:0.12.6", [], [], with_ollama) == ["/usr/local/bin/ollama", "serve"]


def test_other_images_cannot_run_locally():
    with pytest.raises(CannotRunLocally, match="image nginx:1.27 cannot run locally"):
        program_for("nginx:1.27", [], [], which)


def test_missing_program_is_named():
    with pytest.raises(CannotRunLocally, match="`litellm` program"):
        program_for("ghcr.io/berriai/litellm:x", [], [], lambda _: None)


def test_config_map_volume_becomes_files_and_paths_are_rewritten():
    pod = {"volumes": [{"name": "config", "configMap": {"name": "cm"}},
                       {"name": "one", "configMap": {"name": "cm", "items": [{"key": "a.yaml", "path": "renamed.yaml"}]}}]}
    container = {"volumeMounts": [{"name": "config", "mountPath": "/etc/litellm"},
                                  {"name": "one", "mountPath": "/etc/one/file.yaml", "subPath": "renamed.yaml"}]}
    objects = {("ConfigMap", "cm"): {"kind": "ConfigMap", "data": {"config.yaml": "x: 1", "a.yaml": "a: 2"}}}
    files, mounts = mounted_files(pod, container, objects, "/home/v")
    assert files["/home/v/config/config.yaml"] == "x: 1"
    assert files["/home/v/one/renamed.yaml"] == "a: 2"
    assert "/home/v/one/config.yaml" not in files
    assert mounts == {"/etc/litellm": "/home/v/config", "/etc/one/file.yaml": "/home/v/one/renamed.yaml"}
    assert rewrite_mount_path("/etc/litellm/config.yaml", mounts) == "/home/v/config/config.yaml"
    assert rewrite_mount_arg("--config=/etc/litellm", mounts) == "--config=/home/v/config"
    assert rewrite_mount_path("/etc/litellmx/other", mounts) == "/etc/litellmx/other"
    assert rewrite_mount_path("/etc/one/file.yaml", mounts) == "/home/v/one/renamed.yaml"


def test_only_values_that_are_mounted_paths_are_rewritten():
    """An agent's instructions and a python-string server's tools mention /tmp (the charts' emptyDir)
    as text: they reach the process as written (issue 26); a value that is a path below it moves."""
    tools = "def save(text: str) -> str:\n    open('/tmp/notes.txt', 'w').write(text)\n    return 'saved in /tmp'\n"
    instructions = "Keep scratch files in /tmp. Never read /tmp/secrets or /tmp"
    container = {"image": "ghcr.io/kaos-tools/kaos-runtime:0.1.0", "command": ["kaos-runtime", "agent"],
                 "args": ["--cache", "/tmp/cache", "--log=/tmp/log", "write to /tmp"],
                 "env": [{"name": "AGENT_INSTRUCTIONS", "value": instructions},
                         {"name": "MCP_TOOLS_STRING", "value": tools},
                         {"name": "CACHE_DIR", "value": "/tmp/cache"}, {"name": "TMPDIR", "value": "/tmp"},
                         {"name": "NEAR", "value": "/tmpfs/x"}],
                 "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}]}
    process = local_process(deployment(container, [{"name": "tmp", "emptyDir": {}}]), {}, 1234, "/home/vol", which)
    env = process.env_dict
    assert (env["AGENT_INSTRUCTIONS"], env["MCP_TOOLS_STRING"], env["NEAR"]) == (instructions, tools, "/tmpfs/x")
    assert (env["CACHE_DIR"], env["TMPDIR"]) == ("/home/vol/tmp/cache", "/home/vol/tmp")
    assert process.argv[-4:] == ("--cache", "/home/vol/tmp/cache", "--log=/home/vol/tmp/log", "write to /tmp")


def test_readiness_path():
    assert readiness_path({"readinessProbe": {"httpGet": {"path": "/ready", "port": "http"}}}) == "/ready"
    assert readiness_path({"readinessProbe": {"tcpSocket": {"port": 8000}}}) is None
    assert readiness_path({}) is None


def deployment(container: dict, volumes=None) -> dict:
    return {"kind": "Deployment", "metadata": {"name": "modelapi-llm"},
            "spec": {"template": {"spec": {"containers": [container], "volumes": volumes or []}}}}


def test_local_process_overrides_host_and_port_and_expands_args():
    container = {
        "image": "ghcr.io/berriai/litellm:main-v1.106.2",
        "command": ["litellm"],
        "args": ["--config", "/etc/litellm/config.yaml", "--host", "$(HOST)", "--port", "$(PORT)"],
        "env": [{"name": "HOST", "value": "0.0.0.0"}, {"name": "PORT", "value": "8000"}, {"name": "A", "value": "b"}],
        "volumeMounts": [{"name": "config", "mountPath": "/etc/litellm"}],
        "readinessProbe": {"httpGet": {"path": "/health/readiness", "port": "http"}},
    }
    objects = {("ConfigMap", "modelapi-llm"): {"kind": "ConfigMap", "data": {"config.yaml": "model_list: []"}}}
    process = local_process(deployment(container, [{"name": "config", "configMap": {"name": "modelapi-llm"}}]),
                            objects, 45678, "/home/vol", which, {"PATH": "/usr/bin", "HOST": "ignored"})
    assert process.argv == ("/venv/bin/litellm", "--config", "/home/vol/config/config.yaml",
                            "--host", "127.0.0.1", "--port", "45678")
    env = process.env_dict
    assert (env["HOST"], env["PORT"], env["A"], env["PATH"]) == ("127.0.0.1", "45678", "b", "/usr/bin")
    assert "LITELLM_LOCAL_MODEL_COST_MAP" not in env, "the modelapi chart sets it for LiteLLM, not the local backend"
    assert process.files == (("/home/vol/config/config.yaml", "model_list: []"),)
    assert process.readiness_path == "/health/readiness"
    assert process.port == 45678


def test_same_inputs_give_equal_processes_so_nothing_rolls():
    container = {"image": "ghcr.io/kaos-tools/kaos-runtime:0.1.0", "command": ["kaos-runtime", "agent"],
                 "env": [{"name": "AGENT_NAME", "value": "a"}]}
    first = local_process(deployment(container), {}, 1234, "/v", which)
    assert first == local_process(deployment(container), {}, 1234, "/v", which)
    changed = {**container, "env": [{"name": "AGENT_NAME", "value": "b"}]}
    assert first != local_process(deployment(changed), {}, 1234, "/v", which)


def test_ollama_gets_its_host_variable():
    container = {"image": "ollama/ollama:0.12.6", "command": ["ollama", "serve"],
                 "env": [{"name": "OLLAMA_HOST", "value": "$(HOST):$(PORT)"}]}
    process = local_process(deployment(container), {}, 11500, "/v", with_ollama)
    assert process.env_dict["OLLAMA_HOST"] == "127.0.0.1:11500"

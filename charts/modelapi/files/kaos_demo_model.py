"""KAOS's offline demo model: a LiteLLM custom provider (mounted beside config.yaml) that
answers without any LLM, by rules, so that a network of agents can be seen working offline.

A Proxy ModelAPI registers it in its config and offers it under any name::

    litellm_settings:
      custom_provider_map:
        - {"provider": "kaos-demo", "custom_handler": kaos_demo_model.demo_model}
    model_list:
      - model_name: quickstart-offline
        litellm_params: {model: kaos-demo/quickstart-offline}

Each turn it does one thing, the first that applies (tools are OpenAI ``tools``: give the
agents ``toolCalling: native``):

- the request holds tool results after the last user message: answer with them;
- ``delegate`` is offered (the agent has peers): delegate the user's text to the peer whose
  description shares most words with it;
- a tool's required arguments can all be filled from the user's text (numbers for integer and
  number parameters, in order; the whole text for string ones): call it, preferring the tool
  that uses the most numbers;
- else answer that it is a demo and has nothing to do with the text.

Every answer ends with a line that says what answered and how to use a real model.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from typing import Any, AsyncIterator, Iterator

from litellm import ModelResponse
from litellm.llms.custom_llm import CustomLLM

NOTICE = ("(Answered by KAOS's offline demo model: rules, not an LLM; it delegates, calls one tool and "
          "repeats what came back. Export OPENAI_API_KEY before `kaos up` for gpt-4o-mini, or run "
          "examples/local-llm/ for SmolLM2 on llama.cpp.)")
DELEGATE = "delegate"
NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
WORD = re.compile(r"[a-z]+")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def _without_notice(text: str) -> str:
    return text.replace(NOTICE, "").strip()


def _functions(tools: list[dict] | None) -> dict[str, dict]:
    functions = {}
    for tool in tools or []:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and function.get("name"):
            functions[function["name"]] = function
    return functions


def _arguments(function: dict, text: str) -> tuple[int, dict] | None:
    """The arguments of a call of ``function`` filled from ``text`` and how many numbers they
    use, or None when a required parameter cannot be filled."""
    schema = function.get("parameters") or {}
    properties = schema.get("properties") or {}
    required = schema.get("required") or list(properties)
    numbers = NUMBER.findall(text)
    arguments, used = {}, 0
    for name in required:
        kind = (properties.get(name) or {}).get("type", "string")
        if kind in ("integer", "number"):
            if used == len(numbers):
                return None
            value = float(numbers[used])
            arguments[name] = int(value) if kind == "integer" else value
            used += 1
        elif kind == "string":
            arguments[name] = text
        else:
            return None
    return (used, arguments) if arguments else None


def _peer(function: dict, text: str) -> str | None:
    agent = ((function.get("parameters") or {}).get("properties") or {}).get("agent") or {}
    peers = [peer for peer in agent.get("enum") or [] if isinstance(peer, str)]
    if not peers:
        return None
    words = set(WORD.findall(text.lower()))
    described = function.get("description") or ""

    def overlap(peer: str) -> int:
        line = next((line for line in described.splitlines() if line.startswith(f"- {peer}:")), "")
        return len(words & set(WORD.findall(line.lower())))

    return max(peers, key=overlap)


def _call(name: str, arguments: dict) -> dict:
    return {"tool_call": {"id": f"call_{uuid.uuid4().hex[:12]}", "type": "function",
                          "function": {"name": name, "arguments": json.dumps(arguments)}}}


def _answer(calls: dict[str, dict], results: list[dict]) -> str:
    lines = []
    for result in results:
        call = calls.get(result.get("tool_call_id"), {})
        name = call.get("name", "a tool")
        try:
            arguments = json.loads(call.get("arguments") or "{}")
        except ValueError:
            arguments = {}
        said = _without_notice(_text(result.get("content")))
        if name == DELEGATE:
            lines.append(f"I asked {arguments.get('agent', 'another agent')}. It answered: {said}")
        else:
            shown = ", ".join(f"{key}={json.dumps(value)}" for key, value in arguments.items())
            lines.append(f"I called {name}({shown}). It returned: {said}")
    return "\n".join(lines)


def decide(messages: list[dict], tools: list[dict] | None) -> dict:
    """The demo model's reply to a chat request: ``{"text": ...}`` or ``{"tool_call": ...}``."""
    last_user = max((i for i, message in enumerate(messages) if message.get("role") == "user"), default=-1)
    text = _text(messages[last_user].get("content")).strip() if last_user >= 0 else ""
    later = messages[last_user + 1:]
    results = [message for message in later if message.get("role") == "tool"]
    if results:
        calls = {call.get("id"): call.get("function") or {}
                 for message in later for call in message.get("tool_calls") or []}
        return {"text": f"{_answer(calls, results)}\n\n{NOTICE}"}
    functions = _functions(tools)
    if DELEGATE in functions and text:
        peer = _peer(functions[DELEGATE], text)
        if peer:
            return _call(DELEGATE, {"agent": peer, "task": text})
    fits = [(filled[0], name, filled[1]) for name, function in functions.items()
            if name != DELEGATE and text and (filled := _arguments(function, text))]
    if fits:
        _, name, arguments = max(fits, key=lambda fit: fit[0])
        return _call(name, arguments)
    said = f'You said: "{text}". ' if text else ""
    return {"text": f"{said}This demo model has no tool or agent to hand that to.\n\n{NOTICE}"}


def _usage(messages: list[dict], reply: dict) -> dict:
    prompt = sum(len(_text(message.get("content"))) for message in messages) // 4 + 1
    completion = len(json.dumps(reply)) // 4 + 1
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _response(model: str, messages: list[dict], reply: dict) -> ModelResponse:
    message: dict[str, Any] = {"role": "assistant", "content": reply.get("text")}
    if "tool_call" in reply:
        message["tool_calls"] = [reply["tool_call"]]
    return ModelResponse(
        id=f"chatcmpl-{uuid.uuid4().hex}", created=int(time.time()), model=model, object="chat.completion",
        choices=[{"index": 0, "message": message,
                  "finish_reason": "tool_calls" if "tool_call" in reply else "stop"}],
        usage=_usage(messages, reply),
    )


def _chunks(messages: list[dict], reply: dict) -> list[dict]:
    usage = _usage(messages, reply)
    if "tool_call" in reply:
        call = reply["tool_call"]
        return [{"text": "", "tool_use": {**call, "index": 0}, "is_finished": True,
                 "finish_reason": "tool_calls", "usage": usage, "index": 0}]
    words = re.findall(r"\S+\s*", reply["text"])
    chunks = [{"text": word, "tool_use": None, "is_finished": False, "finish_reason": "", "usage": None,
               "index": 0} for word in words]
    chunks.append({"text": "", "tool_use": None, "is_finished": True, "finish_reason": "stop",
                   "usage": usage, "index": 0})
    return chunks


class DemoModel(CustomLLM):
    """The LiteLLM handler: :func:`decide` for plain and streamed chat completions."""

    def completion(self, model, messages, *args, optional_params=None, **kwargs) -> ModelResponse:
        return _response(model, messages, decide(messages, (optional_params or {}).get("tools")))

    async def acompletion(self, model, messages, *args, optional_params=None, **kwargs) -> ModelResponse:
        return self.completion(model, messages, optional_params=optional_params)

    def streaming(self, model, messages, *args, optional_params=None, **kwargs) -> Iterator[dict]:
        yield from _chunks(messages, decide(messages, (optional_params or {}).get("tools")))

    async def astreaming(self, model, messages, *args, optional_params=None, **kwargs) -> AsyncIterator[dict]:
        for chunk in self.streaming(model, messages, optional_params=optional_params):
            yield chunk


demo_model = DemoModel()

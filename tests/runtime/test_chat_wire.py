"""kaos_runtime.clients.chat_wire: chat completions bodies, answers, chunks and errors (pure)."""

from __future__ import annotations

import pytest

from kaos_runtime.clients.chat_wire import (
    Delta,
    ModelError,
    TransientModelError,
    delta_of,
    http_failure,
    reply_of,
    request_body,
)
from kaos_runtime.clients.tool_calls import NativeCall

CALL = {"id": "c1", "type": "function", "function": {"name": "echo", "arguments": '{"m": 1}'}}


def test_a_request_body_asks_a_stream_for_its_usage_and_offers_tools_only_when_there_are_some():
    messages = [{"role": "user", "content": "hi"}]
    assert request_body("m", messages, None, stream=False) == {"model": "m", "messages": messages}
    assert request_body("m", messages, [], stream=True) == {
        "model": "m", "messages": messages, "stream": True, "stream_options": {"include_usage": True}}
    assert request_body("m", messages, [{"type": "function"}], stream=False)["tools"] == [{"type": "function"}]


def test_a_completion_gives_its_text_usage_and_tool_calls():
    reply = reply_of({"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [CALL]}}],
                      "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}})
    assert reply.content == ""
    assert reply.usage == {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
    assert reply.tool_calls == (NativeCall("c1", "echo", '{"m": 1}'),)


def test_a_completion_without_usage_counts_zero_and_text_parts_are_joined():
    reply = reply_of({"choices": [{"message": {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}}]})
    assert (reply.content, reply.usage["total_tokens"]) == ("ab", 0)


@pytest.mark.parametrize("payload, text", [
    ({"error": {"message": "model not loaded"}}, "model not loaded"),
    ({"choices": []}, "not a chat completion"),
    ({"object": "list"}, "not a chat completion"),
    ([1, 2], "not a chat completion"),
    ({"choices": [{"message": "text"}]}, "not a chat completion"),
])
def test_what_is_not_a_completion_is_a_model_error(payload, text):
    with pytest.raises(ModelError, match=text) as caught:
        reply_of(payload)
    assert not isinstance(caught.value, TransientModelError)


def test_a_chunk_gives_text_fragments_and_the_usage_and_an_error_chunk_fails():
    assert delta_of({"choices": [{"delta": {"content": "He"}}]}) == Delta("He")
    assert delta_of({"choices": [{"delta": {"tool_calls": [CALL]}}]}).tool_calls == (CALL,)
    assert delta_of({"choices": [], "usage": {"total_tokens": 7}}).usage["total_tokens"] == 7
    with pytest.raises(ModelError, match="mid-stream: overloaded"):
        delta_of({"error": {"message": "overloaded"}})


@pytest.mark.parametrize("status, transient", [(400, False), (401, False), (404, False), (429, True), (500, True),
                                               (503, True), (408, True)])
def test_http_errors_are_transient_only_where_a_retry_may_help(status, transient):
    error = http_failure(status, b'{"error": "x"}')
    assert isinstance(error, TransientModelError) is transient
    assert f"HTTP {status}" in str(error) and '"error": "x"' in str(error)

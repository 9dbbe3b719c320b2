"""kaos_runtime.chat_request: validation of a chat completions body (4xx, never 500)."""

from __future__ import annotations

import pytest

from kaos_runtime.chat_request import BadRequest, parse_chat_body, parse_depth


@pytest.mark.parametrize("raw, detail", [
    (b"{", "malformed JSON"),
    (b"[]", "JSON object"),
    (b"{}", "messages is required"),
    (b'{"messages": []}', "must not be empty"),
    (b'{"messages": "hi"}', "must be a list"),
    (b'{"messages": [1]}', "must be an object"),
    (b'{"messages": [{"role": "wizard", "content": "x"}]}', "role"),
    (b'{"messages": [{"role": "user", "content": 5}]}', "content"),
    (b'{"messages": [{"role": "system", "content": "x"}]}', "user message"),
    (b'{"messages": [{"role": "user", "content": "x"}], "stream": "yes"}', "stream"),
    (b'{"messages": [{"role": "user", "content": "x"}], "session_id": 3}', "session_id"),
])
def test_bad_chat_bodies(raw, detail):
    with pytest.raises(BadRequest, match=detail) as caught:
        parse_chat_body(raw)
    assert caught.value.status == 400


def test_chat_body_accepts_content_parts_and_delegations():
    body = parse_chat_body(b'{"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, '
                           b'{"type": "text", "text": "b"}]}, {"role": "task-delegation", "content": "t"}]}')
    assert body.messages == [{"role": "user", "content": "ab"}, {"role": "task-delegation", "content": "t"}]
    assert parse_depth(None) == 0 and parse_depth("2") == 2
    with pytest.raises(BadRequest):
        parse_depth("-1")

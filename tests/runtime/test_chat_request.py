"""kaos_runtime.protocols.chat_request: validation of a chat completions body (4xx, never 500)."""

from __future__ import annotations

import pytest

from kaos_runtime.protocols.chat_request import (
    BadRequest,
    parse_chat_body,
    parse_depth,
    parse_limit,
    parse_session_header,
)


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


@pytest.mark.parametrize("raw, detail", [
    (b'{"messages": [{"role": "user", "content": [{"type": 5, "text": "a"}]}]}', "string type"),
    (b'{"messages": [{"role": "user", "content": "x"}], "session_id": " "}', "session_id"),
    (b'{"messages": [{"role": "user", "content": "x"}], "session_id": "s\\n"}', "session_id"),
    (b'{"messages": [{"role": "user", "content": "x"}], "session_id": " s"}', "session_id"),
    (b'{"messages": [{"role": "user", "content": "x"}], "session_id": "s\\u00e9"}', "session_id"),
])
def test_what_the_openapi_schema_forbids_is_400(raw, detail):
    with pytest.raises(BadRequest, match=detail):
        parse_chat_body(raw)


def test_session_ids_travel_in_headers():
    assert parse_chat_body(b'{"messages": [{"role": "user"}], "session_id": "my session-1"}').session_id == \
        "my session-1"
    assert parse_session_header(None, "X-Session-ID") is None and parse_session_header("", "X-Session-ID") is None
    assert parse_session_header("abc", "X-Session-ID") == "abc"
    for bad in ("a\u00e9", " a", "a\t", "a\x00"):
        with pytest.raises(BadRequest, match="X-Session-ID"):
            parse_session_header(bad, "X-Session-ID")


@pytest.mark.parametrize("raw", [" 5", "+5", "1_0", "\u0663", "5.0", "-0", "9" * 11, str(2**31)])
def test_integers_are_ascii_digits_within_range(raw):
    with pytest.raises(BadRequest, match="integer from 0"):
        parse_limit(raw)
    with pytest.raises(BadRequest):
        parse_depth(raw)


def test_integers_absent_or_empty_are_none():
    assert parse_limit(None) is None and parse_limit("") is None and parse_limit("0") == 0
    assert parse_limit(str(2**31 - 1)) == 2**31 - 1 and parse_depth("") == 0

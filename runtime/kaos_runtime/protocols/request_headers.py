"""The KAOS request headers the agent reads, each with its rule (pure): ``RULES`` is what
``core.request_guard.RequestGuard`` checks on every request, so that a bad value is a 400 before
any work on every route (chat completions, ``/a2a``, ``/mcp``, ``/approvals``), never a whole run
that a proxy then refuses to pass back (a 20 kB session id echoed in the answer's header).

- ``X-Session-ID``: a session id (``chat_request.SESSION_ID_PATTERN``: at most 128 visible ASCII
  characters, spaces only inside).
- ``X-KAOS-Delegated-By``, ``X-KAOS-Trigger``: a name (the delegating agent's, a Trigger's),
  recorded as the caller: the same rule.
- ``X-KAOS-Delegation-Depth``, ``X-KAOS-Max-Steps``, ``X-KAOS-Max-Tokens``: whole numbers
  (``chat_request``'s parsers, whose messages the 400 says).

An empty value counts as absent, as the routes read it. ``X-KAOS-On-Behalf-Of`` has its own rule
(``core.principal``: one that is malformed or too long is ignored, never trusted).
"""

from __future__ import annotations

import re

from ..clients.peers import DEPTH_HEADER
from .chat_request import (
    MAX_STEPS_HEADER,
    MAX_TOKENS_HEADER,
    SESSION_HEADER,
    BadRequest,
    parse_bound,
    parse_depth,
    parse_session_header,
)

DELEGATED_BY_HEADER = "X-KAOS-Delegated-By"
TRIGGER_HEADER = "X-KAOS-Trigger"
NAME_MAX = 128


def _visible(header: str, most: int):
    """The rule of a text header: visible ASCII, spaces only inside, at most ``most`` characters."""
    pattern = re.compile(rf"[!-~]([ -~]{{0,{most - 2}}}[!-~])?")
    problem = f"{header} must be at most {most} visible ASCII characters (spaces inside)"
    return lambda value: None if not value or pattern.fullmatch(value) else problem


def _parsed(parse):
    """The rule of a header one of chat_request's parsers reads: its 400's message."""

    def rule(value: str) -> str | None:
        try:
            parse(value)
        except BadRequest as error:
            return error.detail
        return None

    return rule


RULES = {name.lower().encode(): rule for name, rule in (
    (SESSION_HEADER, _parsed(lambda value: parse_session_header(value, SESSION_HEADER))),
    (DELEGATED_BY_HEADER, _visible(DELEGATED_BY_HEADER, NAME_MAX)),
    (TRIGGER_HEADER, _visible(TRIGGER_HEADER, NAME_MAX)),
    (DEPTH_HEADER, _parsed(parse_depth)),
    (MAX_STEPS_HEADER, _parsed(lambda value: parse_bound(value, MAX_STEPS_HEADER))),
    (MAX_TOKENS_HEADER, _parsed(lambda value: parse_bound(value, MAX_TOKENS_HEADER))),
)}

"""Executes one Trigger run: its message to the agent's OpenAI-compatible endpoint
(``POST <endpoint>/v1/chat/completions``), bounded by the run's limits, and how it ended.

The run's events land in the agent's memory under the run's session (``X-Session-ID``). The
agent counts the run against its token budgets as the caller ``trigger:<name>``
(``X-KAOS-Trigger``), and bounds it by ``limits.maxSteps`` / ``limits.maxTokens`` as well as its
own limits (``X-KAOS-Max-Steps`` / ``X-KAOS-Max-Tokens``); an answer the agent marks as stopped
by a limit (``X-KAOS-Stopped: <reason>``) ends the run as Failed. ``limits.timeout`` is kept
here: the request is cancelled, which stops the agent's loop, and the run is TimedOut. For an
agent with authentication, the Trigger's ``spec.credentials`` token goes as ``Authorization:
Bearer``; it is never put in a result's text.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable

import httpx

from kaos.triggers.runs import FAILED, SUCCEEDED, TIMED_OUT, Run
from kaos.triggers.spec import Limits

SESSION_HEADER = "X-Session-ID"
TRIGGER_HEADER = "X-KAOS-Trigger"
MAX_STEPS_HEADER = "X-KAOS-Max-Steps"
MAX_TOKENS_HEADER = "X-KAOS-Max-Tokens"
STOPPED_HEADER = "X-KAOS-Stopped"


@dataclass(frozen=True)
class Result:
    outcome: str
    end: datetime
    text: str
    tokens: int = 0


def request_headers(trigger: str, run: Run, limits: Limits, credential: str | None = None) -> dict[str, str]:
    headers = {SESSION_HEADER: run.session_id, TRIGGER_HEADER: trigger}
    if credential:
        headers["Authorization"] = f"Bearer {credential}"
    if limits.max_steps:
        headers[MAX_STEPS_HEADER] = str(limits.max_steps)
    if limits.max_tokens:
        headers[MAX_TOKENS_HEADER] = str(limits.max_tokens)
    return headers


async def execute(client: httpx.AsyncClient, endpoint: str, trigger: str, run: Run, message: str, limits: Limits,
                  *, credential: str | None = None,
                  clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc)) -> Result:
    """Send ``message`` for ``run`` and wait (at most ``limits.timeout``) for the answer;
    ``credential``: the bearer token of ``spec.credentials``, if any."""
    body = {"model": "trigger", "messages": [{"role": "user", "content": message}]}
    try:
        async with asyncio.timeout(limits.timeout):
            response = await client.post(endpoint.rstrip("/") + "/v1/chat/completions", json=body,
                                         headers=request_headers(trigger, run, limits, credential),
                                         timeout=httpx.Timeout(limits.timeout + 5, connect=min(10.0, limits.timeout)))
    except TimeoutError:
        return Result(TIMED_OUT, clock(), f"timed out: the run took longer than limits.timeout ({limits.timeout:g} s)")
    except httpx.HTTPError as error:
        return Result(FAILED, clock(), f"cannot reach the agent at {endpoint}: {type(error).__name__}: {error}")
    return outcome_of(response, limits, clock(), credentialed=bool(credential))


def outcome_of(response: httpx.Response, limits: Limits, end: datetime, credentialed: bool = False) -> Result:
    """How a run ended, from the agent's answer (``credentialed``: the run sent spec.credentials)."""
    try:
        payload = response.json()
    except ValueError:
        payload = None
    if response.status_code == 401:
        return Result(FAILED, end, _refused(credentialed, _error_text(payload, response)))
    if response.status_code != 200:
        return Result(FAILED, end, f"the agent answered {response.status_code}: {_error_text(payload, response)}")
    try:
        text = payload["choices"][0]["message"]["content"] or ""
    except (TypeError, KeyError, IndexError):
        return Result(FAILED, end, f"the agent's answer is not a chat completion: {response.text[:150]}")
    tokens = int(((payload.get("usage") or {}).get("total_tokens")) or 0)
    stopped = response.headers.get(STOPPED_HEADER)
    if stopped:
        return Result(FAILED, end, f"stopped ({stopped}): {text}", tokens)
    if limits.max_tokens and tokens > limits.max_tokens:
        return Result(FAILED, end, f"used {tokens} tokens, more than limits.maxTokens ({limits.max_tokens}): {text}",
                      tokens)
    return Result(SUCCEEDED, end, text, tokens)


def _refused(credentialed: bool, said: str) -> str:
    """What a 401 means for the Trigger, what to set first (a summary keeps 200 characters)."""
    if credentialed:
        return ("the agent refused the token of spec.credentials.secretKeyRef (401): that Secret key must hold one "
                f"of the agent's API keys or a token its OIDC issuer signed; it said: {said}")
    return ("the agent requires authentication (401): set spec.credentials.secretKeyRef to a Secret key holding "
            f"one of its API keys; it said: {said}")


def _error_text(payload, response: httpx.Response) -> str:
    if isinstance(payload, dict):
        if isinstance(payload.get("error"), dict) and payload["error"].get("message"):
            return str(payload["error"]["message"])
        if payload.get("detail"):
            return str(payload["detail"])
    return response.text[:150] or response.reason_phrase

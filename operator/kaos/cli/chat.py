"""`kaos chat AGENT [MESSAGE]`: one message or an interactive chat with an agent through the gateway,
plain or streamed; a streamed call that waits for a person's approval says how to decide it."""

from __future__ import annotations

import json
import sys

import httpx

from kaos.api import AGENT
from kaos.cli.context import UsageError, check_names, gateway_url, token
from kaos.routes import gateway_path


def cmd_chat(args) -> int:
    check_names(AGENT, args.namespace, args.agent)
    url = gateway_url() + gateway_path(args.namespace, "Agent", args.agent) + "/v1/chat/completions"
    messages: list[dict] = []
    bearer = token(args)
    headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
    with httpx.Client(timeout=httpx.Timeout(300.0, connect=5.0), headers=headers) as http:
        if args.message:
            messages.append({"role": "user", "content": args.message})
            _chat_turn(http, url, args, messages)
            return 0
        print(f"chatting with {args.agent} (empty line or Ctrl-D to quit)")
        while True:
            try:
                text = input("> ").strip()
            except EOFError:
                print()
                return 0
            if not text:
                return 0
            messages.append({"role": "user", "content": text})
            _chat_turn(http, url, args, messages)


def _chat_turn(http: httpx.Client, url: str, args, messages: list[dict]) -> None:
    body = {"model": args.agent, "messages": messages, "stream": args.stream}
    if args.stream:
        parts = []
        with http.stream("POST", url, json=body) as response:
            _check_chat(response, args)
            for line in response.iter_lines():
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                chunk = json.loads(line[6:])
                if chunk.get("kaos_approval"):
                    _announce_approval(chunk["kaos_approval"], args)
                delta = chunk["choices"][0].get("delta", {}).get("content") or ""
                parts.append(delta)
                print(delta, end="", flush=True)
        print()
        messages.append({"role": "assistant", "content": "".join(parts)})
    else:
        response = http.post(url, json=body)
        _check_chat(response, args)
        content = response.json()["choices"][0]["message"]["content"]
        print(content)
        messages.append({"role": "assistant", "content": content})


def _announce_approval(approval: dict, args) -> None:
    """A streamed chat's tool call that waits for a person: say so, and how to decide it (on stderr)."""
    flag = "" if args.namespace == "default" else f" -n {args.namespace}"
    print(f"\n[waiting for approval {approval.get('id')}: {approval.get('tool')} "
          f"{json.dumps(approval.get('arguments', {}))}; decide with "
          f"`kaos approvals approve|reject {approval.get('id')}{flag}`]", file=sys.stderr, flush=True)


def _check_chat(response: httpx.Response, args) -> None:
    if response.status_code == 200:
        return
    response.read()
    try:
        detail = response.json().get("detail") or response.json().get("error")
    except ValueError:
        detail = response.text
    if response.status_code == 404:
        raise UsageError(f"agent {args.agent!r} not found in namespace {args.namespace!r}: {detail}")
    if response.status_code == 401:
        raise UsageError(f"agent {args.agent!r} needs a valid token (HTTP 401: {detail}): "
                         "run `kaos login` or pass --token")
    raise UsageError(f"agent {args.agent!r} answered {response.status_code}: {detail}")



def add_parser(commands) -> None:
    chat = commands.add_parser("chat", help="talk to an agent through the gateway")
    chat.add_argument("agent")
    chat.add_argument("message", nargs="?", help="one message; without it, an interactive chat")
    chat.add_argument("-n", "--namespace", default="default")
    chat.add_argument("--stream", action="store_true")
    chat.add_argument("--token", help="bearer token for agents with spec.auth (default: that of `kaos login`)")
    chat.set_defaults(run=cmd_chat)


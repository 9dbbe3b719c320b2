"""The `kaos` command's parsing and commands: run and use the local control plane (`kaos up`, apply, get, chat, ...)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import httpx
import yaml

from kaos.api import AGENT, KIND_ALIASES, TRIGGER, label_problem, name_problems
from kaos.cli import approvals, audit, display, login, models
from kaos.cli import memory as long_term
from kaos.cli.approvals import Approvals, Held
from kaos.cli.client import Client, ControlPlaneError, spawn_control_plane, stop_control_plane, wait_until
from kaos.local.manifests import ApplyError, ManifestError, load_manifests
from kaos.local.ports import PortInUse, check_port_free
from kaos.local.state import read_state
from kaos.request_guard import parse_host
from kaos.routes import gateway_path
from kaos.settings import variable

UP_TIMEOUT = 600.0


class UsageError(Exception):
    pass


def _documents(paths: list[str], settings) -> list[tuple[dict, str]]:
    from kaos.local.store import validate_documents  # jsonschema and the core: only when needed

    documents = load_manifests(paths)
    try:
        validate_documents(documents, settings.crd_dir)
    except FileNotFoundError as error:  # no CRD schemas under KAOS_CHARTS_DIR
        raise UsageError(str(error)) from None
    return documents


def _settings():
    from kaos.settings import Settings, SettingsError

    try:
        return Settings.from_env()
    except SettingsError as error:
        raise UsageError(f"invalid settings: {error}") from None


def _client() -> Client:
    return Client.from_home(_settings().home)


def _gateway() -> str:
    return _client().url


def _token(args) -> str | None:
    """--token when given, else the token of `kaos login` for this context (None: anonymous)."""
    return getattr(args, "token", None) or login.bearer(_settings().home)


def cmd_login(args) -> int:
    return login.run_login(args, _settings().home)


def cmd_logout(_args) -> int:
    return login.run_logout(_settings().home)


# kaos up


def cmd_up(args) -> int:
    settings = _settings()
    home = settings.home
    state = read_state(home)
    if state is not None:
        raise UsageError(
            f"a control plane is already running on port {state.port} (KAOS_HOME={home}); "
            "use `kaos apply -f ...`, or `kaos down` first"
        )
    documents = _documents(args.file, settings) if args.file else []
    check_port_free(args.port)
    if args.allow_host:  # the settings' names and these: one list, read by the control plane as KAOS_ALLOWED_HOSTS
        settings = settings.model_copy(update={"allowed_hosts": (*settings.allowed_hosts, *args.allow_host)})
    if args.detach:
        return _up_detached(home, args.port, documents, settings.allowed_hosts)
    return _up_foreground(home, args.port, settings, documents)


def _up_detached(home: Path, port: int, documents, allowed_hosts: tuple[str, ...]) -> int:
    state = spawn_control_plane(home, port, extra_env={variable("allowed_hosts"): ",".join(allowed_hosts)})
    client = Client.of(state)
    print(f"control plane started (pid {state.pid}) on {state.url}; logs in {home / 'logs'}")
    if documents:
        for result in client.apply(documents):
            print(f"{result['kind']} {result['namespace']}/{result['name']} {result['result']}")
    seen: dict[tuple, str] = {}

    def all_settled():
        resources = client.resources()
        for resource in resources:
            key = (resource["kind"], resource["metadata"]["namespace"], resource["metadata"]["name"])
            line = display.progress_line(resource)
            if seen.get(key) != line:
                seen[key] = line
                print(line, flush=True)
        return (resources,) if display.settled(resources) else None  # (no resource at all is settled too)

    [resources] = wait_until(all_settled, UP_TIMEOUT, interval=0.2, what="every resource to be Ready or Failed")
    print()
    print(display.summary(resources, state.url))
    failed = [r for r in resources if r["status"].get("phase") == "Failed"]
    for resource in failed:
        print(f"error: {resource['kind']} {resource['metadata']['name']} failed: {resource['status'].get('message')}",
              file=sys.stderr)
    return 1 if failed else 0


def _up_foreground(home: Path, port: int, settings, documents) -> int:
    from kaos.local.server import serve

    gateway = f"http://127.0.0.1:{port}"
    printed_summary = False

    def on_change(ref, resource) -> None:
        nonlocal printed_summary
        if resource is None:
            print(f"{ref.kind} {ref.namespace}/{ref.name}: deleted", flush=True)
            return
        print(display.progress_line(resource), flush=True)
        everything = control.list()
        if not printed_summary and display.settled(everything):
            printed_summary = True
            print("\n" + display.summary(everything, gateway) + "\n\nPress Ctrl-C to stop everything.", flush=True)

    control = None

    def ready(started) -> None:
        nonlocal control
        control = started
        print(f"control plane and gateway on {gateway} (KAOS_HOME={home})", flush=True)

    asyncio.run(serve(home, port, settings, documents, listener=on_change, ready=ready))
    print("stopped: every process the control plane started is gone")
    return 0


# apply / delete / get / logs / chat / down


def cmd_apply(args) -> int:
    documents = _documents(args.file, _settings())  # a bad manifest is refused before anything is sent
    for result in _client().apply(documents):
        print(f"{result['kind']} {result['namespace']}/{result['name']} {result['result']}")
    return 0


def cmd_delete(args) -> int:
    if args.file:
        targets = []
        for document, source in load_manifests(args.file):
            metadata = document.get("metadata") if isinstance(document.get("metadata"), dict) else {}
            if not document.get("kind") or not metadata.get("name"):
                raise UsageError(f"{source}: a manifest without kind or metadata.name cannot be deleted")
            targets.append((document["kind"], metadata.get("namespace") or "default", metadata["name"]))
    elif args.kind and args.name:
        kind = KIND_ALIASES.get(args.kind.lower())
        if kind is None:
            raise UsageError(f"unknown kind {args.kind!r}; use agent, modelapi, mcpserver or trigger")
        targets = [(kind, args.namespace, args.name)]
    else:
        raise UsageError("give -f PATH, or a kind and a name: kaos delete agent NAME")
    for kind, namespace, name in targets:
        _check_names(kind, namespace, name)
    client = _client()
    for kind, namespace, name in targets:
        client.delete(kind, name, namespace)
        print(f"{kind} {namespace}/{name} deleted")
    return 0


def cmd_get(args) -> int:
    kind = KIND_ALIASES.get(args.kind.lower())
    if kind is None:
        raise UsageError(f"unknown resource type {args.kind!r}; use agents, modelapis, mcpservers, triggers or memorystores")
    resources = _client().resources(kind, None if args.all_namespaces else args.namespace)
    if args.output == "json":
        print(json.dumps({"items": resources}, indent=2))
    elif args.output == "yaml":
        print(yaml.safe_dump({"items": resources}, sort_keys=False), end="")
    else:
        print(display.table(resources, show_namespace=args.all_namespaces))
    return 0


def _deployment_of(client: Client, name: str, namespace: str) -> dict:
    rows = [d for d in client.deployments() if d["namespace"] == namespace and name in (d["resource"], d["name"])]
    if not rows:
        raise UsageError(f"no running workload named {name!r} in namespace {namespace!r} (see `kaos get`)")
    if len(rows) > 1:
        choices = ", ".join(r["name"] for r in rows)
        raise UsageError(f"{name!r} is ambiguous in namespace {namespace!r}; use one of: {choices}")
    return rows[0]


def cmd_logs(args) -> int:
    path = Path(_deployment_of(_client(), args.name, args.namespace)["log"])
    with open(path, "rb") as log:
        sys.stdout.buffer.write(log.read())
        sys.stdout.flush()
        while args.follow:
            chunk = log.read()
            if chunk:
                sys.stdout.buffer.write(chunk)
                sys.stdout.flush()
            else:
                time.sleep(0.2)
    return 0


def cmd_chat(args) -> int:
    _check_names(AGENT, args.namespace, args.agent)
    url = _gateway() + gateway_path(args.namespace, "Agent", args.agent) + "/v1/chat/completions"
    messages: list[dict] = []
    token = _token(args)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
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


def _check_names(kind: str, namespace: str, name: str) -> None:
    """A namespace or name no resource can have is the user's mistake: say which rule it breaks."""
    problems = name_problems(kind, namespace, name)
    if problems:
        raise UsageError(f"{kind}: " + "; ".join(problems))


def _check_namespace(args) -> None:
    """-n/--namespace of any command: a namespace is an RFC 1123 label (it becomes a URL segment)."""
    namespace = getattr(args, "namespace", None)
    problem = label_problem("-n/--namespace", namespace) if namespace is not None else None
    if problem:
        raise UsageError(problem)


def cmd_trigger_run(args) -> int:
    _check_names(TRIGGER, args.namespace, args.name)
    started = _client().run_trigger(args.name, args.namespace)
    print(f"Trigger {args.namespace}/{args.name}: run {started['runId']} started in session {started['sessionId']}")
    return 0


def _approvals_of_network(args) -> tuple[Approvals, list[Held], list[str]]:
    """The approvals of every Ready agent of the namespace (all namespaces with -A)."""
    client = _client()
    namespace = None if getattr(args, "all_namespaces", False) else args.namespace
    agents = [(a["metadata"]["namespace"], a["metadata"]["name"]) for a in client.resources("Agent", namespace)
              if (a.get("status") or {}).get("ready")]
    if not agents:
        where = "any namespace" if namespace is None else f"namespace {namespace!r}"
        raise UsageError(f"no Ready agent in {where} (see `kaos get agents`)")
    gateway = Approvals(client.url, token=_token(args))
    held, problems = gateway.gather(agents, everything=args.all)
    return gateway, held, problems


def cmd_approvals_list(args) -> int:
    gateway, held, problems = _approvals_of_network(args)
    gateway.close()
    for problem in problems:
        print(f"warning: {problem}", file=sys.stderr)
    if args.output == "json":
        print(json.dumps({"approvals": [{**h.approval, "agent": h.holder, "namespace": h.namespace, "via": h.via}
                                        for h in held]}, indent=2))
    else:
        print(approvals.table(held, datetime.now(timezone.utc), show_namespace=args.all_namespaces))
    return 1 if problems and not held else 0


def cmd_approvals_decide(args) -> int:
    if args.agent:  # straight to that agent: no search
        _check_names(AGENT, args.namespace, args.agent)
        gateway = Approvals(_client().url, token=_token(args))
        target = Held(args.namespace, args.agent, args.agent, {"id": args.id})
    else:
        gateway, held, problems = _approvals_of_network(args)
        try:
            target = approvals.find(held, args.id)
        except approvals.ApprovalError as error:
            gateway.close()
            raise approvals.ApprovalError("; ".join([str(error), *problems])) from None
    try:
        decided = gateway.decide(target, args.decision, args.reason or "")
    finally:
        gateway.close()
    outcome = decided.get("status") or args.decision
    reason = f": {decided['reason']}" if decided.get("reason") else ""
    print(f"approval {target.id} of agent {target.namespace}/{target.holder} ({decided.get('tool') or '-'}) "
          f"{outcome} by {decided.get('decided_by') or '-'}{reason}")
    return 0


def _agent_memory(args) -> long_term.AgentMemory:
    _check_names(AGENT, args.namespace, args.agent)
    return long_term.AgentMemory(_gateway(), args.namespace, args.agent, token=_token(args))


def _positive(text: str) -> int:
    if not (text.isascii() and text.isdigit() and 1 <= int(text) <= 1000):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number from 1 to 1000")
    return int(text)


def cmd_memory_list(args) -> int:
    memory = _agent_memory(args)
    try:
        answer = memory.search(args.query, args.limit) if getattr(args, "query", None) else memory.list(args.limit)
    finally:
        memory.close()
    if args.output == "json":
        print(json.dumps(answer, indent=2))
        return 0
    print(long_term.table(answer.get("memories") or [], searched=bool(getattr(args, "query", None))))
    shown, total = len(answer.get("memories") or []), answer.get("total", 0)
    if not getattr(args, "query", None) and total > shown:
        print(f"({shown} of {total}; --limit to see more)", file=sys.stderr)
    return 0


def cmd_memory_forget(args) -> int:
    if bool(args.id) == bool(args.all):
        raise UsageError("kaos memory forget: give either a memory id (from `kaos memory list`) or --all")
    memory = _agent_memory(args)
    try:
        answer = memory.forget(None if args.all else args.id)
    finally:
        memory.close()
    deleted = answer.get("deleted")
    count = len(deleted) if isinstance(deleted, list) else int(deleted or 0)
    print(f"agent {args.namespace}/{args.agent}: forgot {count} {'memory' if count == 1 else 'memories'}")
    return 0


def cmd_audit(args) -> int:
    _check_names(AGENT, args.namespace, args.agent)
    found = audit.events(_client().url, args.namespace, args.agent, _token(args), args.limit)
    print(json.dumps({"events": found}, indent=2) if args.output == "json" else audit.table(found))
    return 0


def cmd_down(args) -> int:
    if stop_control_plane(_settings().home):
        print("stopped the control plane and every process it started")
    else:
        print("no control plane is running")
    return 0


def _host_entry(text: str) -> str:
    try:
        parse_host(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text.strip()


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="kaos", description="Run KAOS agents, model APIs and MCP servers locally.")
    commands = root.add_subparsers(dest="command", required=True)

    up = commands.add_parser("up", help="start the local control plane and gateway, and apply manifests")
    up.add_argument("-f", "--file", action="append", default=[], help="manifest file or folder (repeatable)")
    up.add_argument("--port", type=int, default=8080, help="gateway port on 127.0.0.1 (default 8080)")
    up.add_argument("--detach", "-d", action="store_true", help="run in the background; return once all are Ready or Failed")
    up.add_argument("--allow-host", action="append", default=[], type=_host_entry, metavar="NAME[:PORT]",
                    help="a Host name the gateway answers to besides 127.0.0.1, localhost and [::1] (repeatable; "
                         "e.g. the name of a reverse proxy); others are refused against DNS rebinding")
    up.set_defaults(run=cmd_up)

    apply = commands.add_parser("apply", help="create or update resources from manifests")
    apply.add_argument("-f", "--file", action="append", required=True)
    apply.set_defaults(run=cmd_apply)

    delete = commands.add_parser("delete", help="delete resources: -f PATH, or KIND NAME")
    delete.add_argument("kind", nargs="?", help="agent, modelapi, mcpserver, trigger or memorystore")
    delete.add_argument("name", nargs="?")
    delete.add_argument("-f", "--file", action="append")
    delete.add_argument("-n", "--namespace", default="default")
    delete.set_defaults(run=cmd_delete)

    get = commands.add_parser("get", help="list agents, modelapis, mcpservers, triggers or memorystores")
    get.add_argument("kind", help="agents, modelapis, mcpservers, triggers or memorystores")
    get.add_argument("-n", "--namespace", default="default")
    get.add_argument("-A", "--all-namespaces", action="store_true")
    get.add_argument("-o", "--output", choices=["table", "json", "yaml"], default="table")
    get.set_defaults(run=cmd_get)

    logs = commands.add_parser("logs", help="print a workload's log")
    logs.add_argument("name", help="resource name (or agent-NAME, modelapi-NAME, mcpserver-NAME)")
    logs.add_argument("-n", "--namespace", default="default")
    logs.add_argument("-f", "--follow", action="store_true")
    logs.set_defaults(run=cmd_logs)

    chat = commands.add_parser("chat", help="talk to an agent through the gateway")
    chat.add_argument("agent")
    chat.add_argument("message", nargs="?", help="one message; without it, an interactive chat")
    chat.add_argument("-n", "--namespace", default="default")
    chat.add_argument("--stream", action="store_true")
    chat.add_argument("--token", help="bearer token for agents with spec.auth (default: that of `kaos login`)")
    chat.set_defaults(run=cmd_chat)

    trigger = commands.add_parser("trigger", help="act on a Trigger: `kaos trigger run NAME` starts a run now")
    trigger_actions = trigger.add_subparsers(dest="action", required=True)
    run = trigger_actions.add_parser("run", help="start a run of the Trigger now, whatever its schedule")
    run.add_argument("name")
    run.add_argument("-n", "--namespace", default="default")
    run.set_defaults(run=cmd_trigger_run)

    _approvals_parser(commands)
    login.add_parsers(commands, cmd_login, cmd_logout)
    models.add_parser(commands)
    _memory_parser(commands)

    trail = commands.add_parser("audit", help="an agent's audit trail: decisions, refusals, forgotten memories, admin reads "
                                              "(docs/security.md, \"Audit\")")
    trail.add_argument("agent")
    trail.add_argument("-n", "--namespace", default="default")
    trail.add_argument("--token", help="bearer token of an admin of the agent (with spec.auth; default: that of `kaos login`)")
    trail.add_argument("--limit", type=int, help="only the newest LIMIT events")
    trail.add_argument("-o", "--output", choices=["table", "json"], default="table")
    trail.set_defaults(run=cmd_audit)

    down = commands.add_parser("down", help="stop the control plane and every process it started")
    down.set_defaults(run=cmd_down)
    return root


APPROVALS_HELP = """Tool calls waiting for a person's decision in the agents of the current network (docs/approvals.md).
The CLI asks every Ready agent of the namespace (-A: of every namespace) through the gateway of `kaos up`.
An approval id is unique within one agent: `approve`/`reject` list the approvals of every agent and
send the decision to the one holding the id; with --agent NAME they send it to that agent without
searching (needed when several agents hold the id). A peer's pending call shows at the peer itself;
one only a coordinator lists is decided through it."""


def _approvals_parser(commands) -> None:
    group = commands.add_parser("approvals", help="list, approve or reject tool calls waiting for a decision",
                                description=APPROVALS_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = group.add_subparsers(dest="action", required=True)

    def common(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("-n", "--namespace", default="default")
        parser.add_argument("-A", "--all-namespaces", action="store_true")
        parser.add_argument("--token", help="bearer token for agents with spec.auth (names who decided; default: that of `kaos login`)")

    listing = actions.add_parser("list", help="pending approvals (--all: decided and expired ones too)",
                                 description=APPROVALS_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    listing.add_argument("--all", action="store_true", help="also approved, rejected and expired ones")
    listing.add_argument("-o", "--output", choices=["table", "json"], default="table")
    common(listing)
    listing.set_defaults(run=cmd_approvals_list)
    for decision in ("approve", "reject"):
        action = actions.add_parser(decision, help=f"{decision} a pending tool call (its id from `kaos approvals list`)",
                                    description=APPROVALS_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
        action.add_argument("id", help="the approval id")
        action.add_argument("--reason", default="", help="why (recorded; a rejection's reason reaches the model)")
        action.add_argument("--agent", help="the agent holding the id: decide there without searching")
        common(action)
        action.set_defaults(run=cmd_approvals_decide, decision=decision, all=True)


MEMORY_HELP = """An agent's long-term memories (the MemoryStore its spec.memory.store names; docs/memory-store.md),
through the gateway of `kaos up`. With the store's scope user an agent shows and forgets only the
caller's own memories: those of the principal of --token (or of `kaos login`), or the anonymous caller's without one."""


def _memory_parser(commands) -> None:
    group = commands.add_parser("memory", help="list, search or forget an agent's long-term memories",
                                description=MEMORY_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = group.add_subparsers(dest="action", required=True)

    def common(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("agent")
        parser.add_argument("-n", "--namespace", default="default")
        parser.add_argument("--token", help="bearer token for agents with spec.auth (whose memories; default: that of `kaos login`)")

    listing = actions.add_parser("list", help="the memories, newest first", description=MEMORY_HELP,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    search = actions.add_parser("search", help="the memories nearest to a text, nearest first",
                                description=MEMORY_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    for parser, what in ((listing, "at most this many (the agent's default: 100)"),
                         (search, "at most this many (the store's topK by default)")):
        common(parser)
        parser.add_argument("--limit", type=_positive, help=what)
        parser.add_argument("-o", "--output", choices=["table", "json"], default="table")
        parser.set_defaults(run=cmd_memory_list)
    search.add_argument("query", help="what to look for")
    forget = actions.add_parser("forget", help="forget one memory (its id) or --all of them",
                                description=MEMORY_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    common(forget)
    forget.add_argument("id", nargs="?", help="the memory id (from `kaos memory list`)")
    forget.add_argument("--all", action="store_true", help="every memory the caller may forget")
    forget.set_defaults(run=cmd_memory_forget)


def parse(argv: list[str]) -> argparse.Namespace:
    """Options and positionals may be mixed (``kaos chat AGENT -n NS MESSAGE``)."""
    root = parser()
    commands = next(a for a in root._actions if isinstance(a, argparse._SubParsersAction))
    command = commands.choices.get(argv[0]) if argv else None
    if command is not None and not any(isinstance(a, argparse._SubParsersAction) for a in command._actions):
        return command.parse_intermixed_args(argv[1:])
    return root.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    try:
        _check_namespace(args)
        return args.run(args)
    except KeyboardInterrupt:
        return 130
    except (UsageError, ControlPlaneError, ManifestError, ApplyError, PortInUse, TimeoutError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except httpx.HTTPError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1

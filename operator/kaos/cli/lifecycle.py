"""`kaos up` and `kaos down`: start the local control plane and its gateway (in the foreground, or
detached until every resource is Ready or Failed), and stop it with every process it started."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from kaos.cli import display
from kaos.cli.client import Client, spawn_control_plane, stop_control_plane, wait_until
from kaos.cli.context import UsageError, current_settings
from kaos.cli.resources import documents_of
from kaos.local.ports import check_port_free
from kaos.local.state import read_state
from kaos.request_guard import parse_host
from kaos.settings import variable

UP_TIMEOUT = 600.0


def cmd_up(args) -> int:
    settings = current_settings()
    home = settings.home
    state = read_state(home)
    if state is not None:
        raise UsageError(
            f"a control plane is already running on port {state.port} (KAOS_HOME={home}); "
            "use `kaos apply -f ...`, or `kaos down` first"
        )
    documents = documents_of(args.file, settings) if args.file else []
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


def cmd_down(args) -> int:
    if stop_control_plane(current_settings().home):
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



def add_parsers(commands) -> None:
    up = commands.add_parser("up", help="start the local control plane and gateway, and apply manifests")
    up.add_argument("-f", "--file", action="append", default=[], help="manifest file or folder (repeatable)")
    up.add_argument("--port", type=int, default=8080, help="gateway port on 127.0.0.1 (default 8080)")
    up.add_argument("--detach", "-d", action="store_true", help="run in the background; return once all are Ready or Failed")
    up.add_argument("--allow-host", action="append", default=[], type=_host_entry, metavar="NAME[:PORT]",
                    help="a Host name the gateway answers to besides 127.0.0.1, localhost and [::1] (repeatable; "
                         "e.g. the name of a reverse proxy); others are refused against DNS rebinding")
    up.set_defaults(run=cmd_up)

    down = commands.add_parser("down", help="stop the control plane and every process it started")
    down.set_defaults(run=cmd_down)

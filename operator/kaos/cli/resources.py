"""`kaos apply`, `delete`, `get` and `logs`: the resources of the running control plane and the
logs of their workloads."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import yaml

from kaos.api import KIND_ALIASES, namespace_of
from kaos.cli import display
from kaos.cli.client import Client
from kaos.cli.context import UsageError, check_names, control_plane, current_settings
from kaos.local.manifests import load_manifests


def documents_of(paths: list[str], settings) -> list[tuple[dict, str]]:
    from kaos.local.store import validate_documents  # jsonschema and the core: only when needed

    documents = load_manifests(paths)
    try:
        validate_documents(documents, settings.crd_dir)
    except FileNotFoundError as error:  # no CRD schemas under KAOS_CHARTS_DIR
        raise UsageError(str(error)) from None
    return documents


def cmd_apply(args) -> int:
    documents = documents_of(args.file, current_settings())  # a bad manifest is refused before anything is sent
    for result in control_plane().apply(documents):
        print(f"{result['kind']} {result['namespace']}/{result['name']} {result['result']}")
    return 0


def cmd_delete(args) -> int:
    if args.file:
        targets = []
        for document, source in load_manifests(args.file):
            metadata = document.get("metadata") if isinstance(document.get("metadata"), dict) else {}
            if not document.get("kind") or not metadata.get("name"):
                raise UsageError(f"{source}: a manifest without kind or metadata.name cannot be deleted")
            targets.append((document["kind"], namespace_of(metadata), metadata["name"]))
    elif args.kind and args.name:
        kind = KIND_ALIASES.get(args.kind.lower())
        if kind is None:
            raise UsageError(f"unknown kind {args.kind!r}; use agent, modelapi, mcpserver or trigger")
        targets = [(kind, args.namespace, args.name)]
    else:
        raise UsageError("give -f PATH, or a kind and a name: kaos delete agent NAME")
    for kind, namespace, name in targets:
        check_names(kind, namespace, name)
    client = control_plane()
    for kind, namespace, name in targets:
        client.delete(kind, name, namespace)
        print(f"{kind} {namespace}/{name} deleted")
    return 0


def cmd_get(args) -> int:
    kind = KIND_ALIASES.get(args.kind.lower())
    if kind is None:
        raise UsageError(f"unknown resource type {args.kind!r}; use agents, modelapis, mcpservers, triggers or memorystores")
    resources = control_plane().resources(kind, None if args.all_namespaces else args.namespace)
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
    path = Path(_deployment_of(control_plane(), args.name, args.namespace)["log"])
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



def add_parsers(commands) -> None:
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


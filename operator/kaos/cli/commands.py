"""The `kaos` command: its parser, put together from one module per verb group, and ``main``.

- ``lifecycle``: `kaos up`, `kaos down`;
- ``resources``: apply, delete, get, logs;
- ``chat``, ``triggers`` (`kaos trigger run`), ``approvals``, ``memory``, ``audit``, ``models``
  (`kaos models push`), ``login`` (`kaos login`, `kaos logout`);
- ``context``: what they share (settings, the control plane's client, the token, name checks).
"""

from __future__ import annotations

import argparse
import sys

import httpx

from kaos.cli import approvals, audit, chat, lifecycle, login, memory, models, resources, triggers
from kaos.cli.client import ControlPlaneError
from kaos.cli.context import UsageError, check_namespace, current_settings
from kaos.local.manifests import ApplyError, ManifestError
from kaos.local.ports import PortInUse


def cmd_login(args) -> int:
    return login.run_login(args, current_settings().home)


def cmd_logout(_args) -> int:
    return login.run_logout(current_settings().home)


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="kaos", description="Run KAOS agents, model APIs and MCP servers locally.")
    commands = root.add_subparsers(dest="command", required=True)

    lifecycle.add_parsers(commands)
    resources.add_parsers(commands)
    chat.add_parser(commands)
    triggers.add_parser(commands)
    approvals.add_parser(commands)
    login.add_parsers(commands, cmd_login, cmd_logout)
    models.add_parser(commands)
    memory.add_parser(commands)
    audit.add_parser(commands)
    return root


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
        check_namespace(args)
        return args.run(args)
    except KeyboardInterrupt:
        return 130
    except (UsageError, ControlPlaneError, ManifestError, ApplyError, PortInUse, TimeoutError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except httpx.HTTPError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1

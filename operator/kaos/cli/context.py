"""What every `kaos` command shares: the user's mistake as ``UsageError``, the settings, the
client of the running control plane and its gateway, the bearer token (--token, else `kaos
login`'s), and the rules on names a command checks before it sends anything."""

from __future__ import annotations

import argparse

from kaos.api import label_problem, name_problems
from kaos.cli import login
from kaos.cli.client import Client


class UsageError(Exception):
    pass


def current_settings():
    from kaos.settings import Settings, SettingsError

    try:
        return Settings.from_env()
    except SettingsError as error:
        raise UsageError(f"invalid settings: {error}") from None


def control_plane() -> Client:
    return Client.from_home(current_settings().home)


def gateway_url() -> str:
    return control_plane().url


def token(args) -> str | None:
    """--token when given, else the token of `kaos login` for this context (None: anonymous)."""
    return getattr(args, "token", None) or login.bearer(current_settings().home)


def check_names(kind: str, namespace: str, name: str) -> None:
    """A namespace or name no resource can have is the user's mistake: say which rule it breaks."""
    problems = name_problems(kind, namespace, name)
    if problems:
        raise UsageError(f"{kind}: " + "; ".join(problems))


def check_namespace(args) -> None:
    """-n/--namespace of any command: a namespace is an RFC 1123 label (it becomes a URL segment)."""
    namespace = getattr(args, "namespace", None)
    problem = label_problem("-n/--namespace", namespace) if namespace is not None else None
    if problem:
        raise UsageError(problem)


def positive(text: str) -> int:
    if not (text.isascii() and text.isdigit() and 1 <= int(text) <= 1000):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number from 1 to 1000")
    return int(text)

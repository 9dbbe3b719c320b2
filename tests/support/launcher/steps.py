"""How the launcher runs its steps: its log lines (``cluster: ...`` on stderr), the external
tools it calls (their output dropped unless asked for, their errors on stderr), and bounded
waits (a poll with a limit, never a sleep as synchronisation)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from tests.support.polling import wait_until

Command = Sequence[str | Path]


class Stop(Exception):
    """Ends the command with exit status 1, its message (when there is one) logged."""


def log(message: str) -> None:
    print(f"cluster: {message}", file=sys.stderr, flush=True)


def run(argv: Command, *, input: str | None = None, quiet: bool = False, **kwargs) -> None:
    """Runs a tool to completion, its output dropped (its errors too when ``quiet``); a failure stops the command."""
    stderr = subprocess.DEVNULL if quiet else None
    try:
        subprocess.run([str(a) for a in argv], input=input, text=True, stdout=subprocess.DEVNULL, stderr=stderr,
                       check=True, **kwargs)
    except subprocess.CalledProcessError as error:
        raise Stop(f"{' '.join(map(str, argv))}: exit status {error.returncode}") from None


def output(argv: Command, **kwargs) -> str:
    """A tool's standard output (its errors on stderr); a failure stops the command."""
    try:
        return subprocess.run([str(a) for a in argv], stdout=subprocess.PIPE, text=True, check=True, **kwargs).stdout
    except subprocess.CalledProcessError as error:
        raise Stop(f"{' '.join(map(str, argv))}: exit status {error.returncode}") from None


def succeeds(argv: Command) -> bool:
    return subprocess.run([str(a) for a in argv], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0


def wait_for(what: str, seconds: float, check: Callable[[], object], log_file: Path | None = None) -> None:
    """Polls ``check`` every half second until it is true; after ``seconds`` stops the command,
    with the last lines of ``log_file`` (the daemon's) on stderr."""
    try:
        wait_until(check, timeout=seconds, interval=0.5, what=what)
    except AssertionError:
        log(f"{what}: not ready after {seconds:g} s")
        if log_file is not None:
            print(tail(log_file), file=sys.stderr, end="", flush=True)
        raise Stop() from None


def tail(path: Path, lines: int = 5) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "".join(line + "\n" for line in text.splitlines()[-lines:])

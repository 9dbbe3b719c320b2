"""Where a running control plane is recorded: KAOS_HOME/controlplane.json (pid, port, and the
admin API's token of this run), readable by the user only (mode 0600).

KAOS_HOME is ``Settings.home``."""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import asdict, dataclass
from pathlib import Path

STATE_FILE = "controlplane.json"


def new_token() -> str:
    """A token for the admin API of one run of the control plane (256 random bits)."""
    return secrets.token_urlsafe(32)


@dataclass(frozen=True)
class State:
    pid: int
    port: int
    started: float
    token: str  # what /_kaos/ calls carry as ``Authorization: Bearer <token>``

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def write_state(home: Path, state: State) -> None:
    """Replace the state file at once; it is created readable and writable by the user only."""
    home.mkdir(parents=True, exist_ok=True)
    temporary = home / f".{STATE_FILE}.tmp"
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as file:
        os.fchmod(descriptor, 0o600)  # one left by an older run may have another mode
        file.write(json.dumps(asdict(state)))
    temporary.replace(home / STATE_FILE)


def read_state(home: Path) -> State | None:
    """The recorded control plane, or None when there is none or its process is gone."""
    try:
        state = State(**json.loads((home / STATE_FILE).read_text()))
    except (OSError, ValueError, TypeError):
        return None
    try:
        os.kill(state.pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    return state


def clear_state(home: Path) -> None:
    try:
        (home / STATE_FILE).unlink()
    except FileNotFoundError:
        pass

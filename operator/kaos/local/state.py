"""Where a running control plane is recorded: KAOS_HOME/controlplane.json (pid, port).

KAOS_HOME is ``Settings.home``."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

STATE_FILE = "controlplane.json"


@dataclass(frozen=True)
class State:
    pid: int
    port: int
    started: float

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def write_state(home: Path, state: State) -> None:
    home.mkdir(parents=True, exist_ok=True)
    temporary = home / f".{STATE_FILE}.tmp"
    temporary.write_text(json.dumps(asdict(state)))
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

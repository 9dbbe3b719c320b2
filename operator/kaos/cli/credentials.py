"""Where `kaos login` keeps its sign-ins: ``$XDG_CONFIG_HOME/kaos/credentials.json`` (by default
``~/.config/kaos/credentials.json``), one entry per context, the KAOS home of the control plane the
CLI talks to (``KAOS_HOME``), so two local networks may trust two issuers.

An entry holds the issuer, client id, scope and audience the login asked for (the next
`kaos login` of the context uses them unless told otherwise) and the tokens. The file holds bearer
tokens: it is created with mode 0600 from the start (never widened and then narrowed) in a
directory of mode 0700, and replaced as a whole, so a reader sees the old file or the new one.
"""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Mapping

from kaos.cli.client import ControlPlaneError

FILE_MODE = 0o600
DIRECTORY_MODE = 0o700
EXPIRY_LEEWAY = 30.0  # seconds: a token this close to its expiry is refreshed before use


@dataclass(frozen=True)
class Login:
    """One context's sign-in; ``expires_at`` is Unix time (0: unknown, treated as not expiring)."""

    issuer: str
    client_id: str
    scope: str
    audience: str = ""
    access_token: str = ""
    refresh_token: str = ""
    expires_at: float = 0.0
    subject: str = ""

    def expired(self, now: float) -> bool:
        return bool(self.expires_at) and now >= self.expires_at - EXPIRY_LEEWAY


def credentials_path(env: Mapping[str, str] = os.environ) -> Path:
    config = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME") or Path.home()) / ".config")
    return Path(config) / "kaos" / "credentials.json"


def context_of(home: Path) -> str:
    """The context a KAOS home is: its absolute path."""
    return str(Path(home).expanduser().resolve())


class CredentialsError(ControlPlaneError):
    """The credentials file is unusable; the message says what to do."""


def _read(path: Path) -> dict[str, dict]:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as error:
        raise CredentialsError(f"{path} cannot be read ({error}): remove it and run `kaos login`") from None
    contexts = data.get("contexts") if isinstance(data, dict) else None
    return contexts if isinstance(contexts, dict) else {}


def load(path: Path, context: str) -> Login | None:
    entry = _read(path).get(context)
    if not isinstance(entry, dict):
        return None
    known = {f.name for f in fields(Login)}
    try:
        return Login(**{key: value for key, value in entry.items() if key in known})
    except TypeError:
        return None


def save(path: Path, context: str, login: Login) -> None:
    contexts = _read(path)
    contexts[context] = asdict(login)
    _write(path, {"contexts": contexts})


def remove(path: Path, context: str) -> bool:
    """Forget the context's sign-in; whether there was one. The file goes when it is the last."""
    contexts = _read(path)
    if context not in contexts:
        return False
    del contexts[context]
    if contexts:
        _write(path, {"contexts": contexts})
    else:
        path.unlink(missing_ok=True)
    return True


def _write(path: Path, data: dict) -> None:
    """A new file, 0600 from its creation (os.open's mode; the umask can only narrow it), then
    renamed over the old one."""
    path.parent.mkdir(mode=DIRECTORY_MODE, parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    try:
        with os.fdopen(descriptor, "w") as handle:
            json.dump(data, handle, indent=2)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise

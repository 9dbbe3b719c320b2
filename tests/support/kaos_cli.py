"""`kaos up --detach` of a folder of manifests on a free port with its own KAOS_HOME, and the
`kaos` CLI (the one installed beside this Python) for the rest, as a user runs them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from kaos.cli.client import Client
from kaos.local.ports import free_port
from kaos.settings import variable

ROOT = Path(__file__).resolve().parents[2]


class Kaos:
    """`kaos up --detach` of ``manifests``; the `kaos` CLI for the rest. Without OPENAI_API_KEY:
    the examples' offline models answer."""

    def __init__(self, home: Path, manifests: Path):
        self.home = home
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        tools = ROOT / ".tools" / "bin"
        self.env = {**os.environ, variable("home"): str(home),
                    "PATH": os.pathsep.join([str(tools), str(Path(sys.executable).parent), os.environ.get("PATH", "")])}
        self.env.pop("OPENAI_API_KEY", None)
        self.up = self.kaos("up", "-f", str(manifests), "--detach", "--port", str(self.port), timeout=240)
        self.client = Client.from_home(home, timeout=30)

    def kaos(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
        program = shutil.which("kaos", path=self.env["PATH"])
        return subprocess.run([program, *args], env=self.env, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)

    def deployment(self, name: str) -> dict:
        return next(row for row in self.client.deployments() if row["name"] == name)

    def down(self) -> None:
        self.kaos("down", timeout=90)
        self.client.close()


@contextmanager
def kaos_running(home: Path, manifests: Path) -> Iterator[Kaos]:
    """`kaos up --detach` of ``manifests`` (failing with its output when it fails), then `kaos down`."""
    kaos = Kaos(home, manifests)
    try:
        assert kaos.up.returncode == 0, f"kaos up failed:\n{kaos.up.stdout}\n{kaos.up.stderr}"
        yield kaos
    finally:
        kaos.down()

"""The control plane of the tests with a stand-in program in place of every workload's (the
runtime, LiteLLM...): a tiny HTTP server on $PORT that shows its argv, pid and env."""

from __future__ import annotations

import sys
import textwrap
from contextlib import asynccontextmanager
from typing import AsyncIterator

from kaos.local.controlplane import ControlPlane
from kaos.settings import Settings

STAND_IN = textwrap.dedent(f"""\
    #!{sys.executable}
    import http.server, json, os, sys
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps({{"argv": sys.argv[1:], "pid": os.getpid(),
                               "env": {{k: v for k, v in os.environ.items() if k.isupper()}}}}).encode()
            self.send_response(200)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        def log_message(self, *args):
            pass
    http.server.ThreadingHTTPServer((os.environ["HOST"], int(os.environ["PORT"])), Handler).serve_forever()
""")


def stand_in_plane(tmp_path, stand_in: str = STAND_IN, environ: dict[str, str] | None = None) -> ControlPlane:
    """A control plane (not started) whose every program is ``stand_in``, its settings from ``environ``."""
    program = tmp_path / "stand-in"
    program.write_text(stand_in)
    program.chmod(0o755)
    return ControlPlane(tmp_path / "home", Settings.from_env(environ or {}), which=lambda name: str(program))


@asynccontextmanager
async def running_plane(tmp_path, stand_in: str = STAND_IN,
                        environ: dict[str, str] | None = None) -> AsyncIterator[ControlPlane]:
    """``stand_in_plane`` started for the block, stopped after it."""
    plane = stand_in_plane(tmp_path, stand_in, environ)
    plane.start()
    try:
        yield plane
    finally:
        await plane.stop()

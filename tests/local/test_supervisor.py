"""The supervisor's readiness follows the probe after the first success, as the kubelet's does."""

import sys
import textwrap

from kaos.local import supervisor
from kaos.local.containers import LocalProcess
from kaos.local.ports import free_port
from tests.support.polling import eventually

# Answers /ready with 200, or 503 while the file named by NOT_READY exists.
SERVER = textwrap.dedent("""
    import http.server, os, sys
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(503 if os.path.exists(os.environ["NOT_READY"]) else 200)
            self.end_headers()
        def log_message(self, *args):
            pass
    http.server.HTTPServer(("127.0.0.1", int(os.environ["PORT"])), Handler).serve_forever()
""")


async def test_ready_process_that_stops_answering_is_taken_out_and_comes_back(tmp_path, monkeypatch):
    monkeypatch.setattr(supervisor, "READY_PROBE_PERIOD", 0.05)
    flag = tmp_path / "not-ready"
    port = free_port()
    spec = LocalProcess(name="probe-me", argv=(sys.executable, "-c", SERVER),
                        env=(("NOT_READY", str(flag)), ("PORT", str(port))), port=port, readiness_path="/ready")
    flips = []
    process = supervisor.Supervisor(spec, tmp_path / "probe-me.log", lambda: flips.append(process.ready))
    process.start()
    try:
        await eventually(lambda: process.ready, timeout=10, what="ready")
        flag.touch()
        await eventually(lambda: not process.ready, timeout=10, what="not ready")
        flag.unlink()
        await eventually(lambda: process.ready, timeout=10, what="ready again")
        assert flips == [True, False, True]
        assert process.restarts == 0, "readiness alone never restarts the process"
    finally:
        await process.stop()

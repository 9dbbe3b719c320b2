"""HTTP servers a test runs in process, on a free port of 127.0.0.1 in a thread: any handler
(``LoopbackServer``), or one fixed body answered to every GET (``StaticServer``: a page or a
document, a JWKS, that a test points a browser or an agent at)."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class LoopbackServer:
    """``handler`` served in a thread; ``url``, the base URL."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class StaticServer(LoopbackServer):
    """``body`` answered to every GET, whatever the path."""

    def __init__(self, body: bytes, content_type: str) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        super().__init__(Handler)

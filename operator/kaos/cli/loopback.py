"""The loopback redirect of `kaos login` (RFC 8252): an HTTP server on 127.0.0.1 that waits for the
one request the issuer sends the browser back with (``/callback?code=...&state=...``), answers
it with a short page, and hands its query to the login."""

from __future__ import annotations

import html
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import parse_qs, urlsplit

CALLBACK_PATH = "/callback"


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        parts = urlsplit(self.path)
        if parts.path != CALLBACK_PATH:
            self._page(404, "Not the sign-in callback.")
            return
        query = {key: values[0] for key, values in parse_qs(parts.query).items()}
        verdict = self.server.judge(query)  # type: ignore[attr-defined]
        self.server.received = query  # type: ignore[attr-defined]
        self._page(200 if verdict is None else 400, verdict or "Signed in: you may close this tab.")

    def _page(self, status: int, text: str) -> None:
        body = f"<!doctype html><title>kaos login</title><p>{html.escape(text)}</p>".encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_) -> None:  # no access log on the user's terminal
        pass


class Loopback:
    """``Loopback(port)`` listens on 127.0.0.1 (port 0: any free one); ``redirect_uri`` is what the
    issuer is told; ``wait(judge, timeout)`` returns the callback's query, or None on timeout.
    ``judge(query)`` says what the page tells the browser: None for success, else the problem."""

    def __init__(self, port: int = 0) -> None:
        self.server = HTTPServer(("127.0.0.1", port), _Handler)
        self.server.timeout = 0.5  # handle_request returns this often, to look at the deadline

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{CALLBACK_PATH}"

    def wait(self, judge, timeout: float) -> dict | None:
        self.server.judge, self.server.received = judge, None  # type: ignore[attr-defined]
        deadline = time.monotonic() + timeout
        while self.server.received is None and time.monotonic() < deadline:  # type: ignore[attr-defined]
            self.server.handle_request()
        return self.server.received  # type: ignore[attr-defined]

    def close(self) -> None:
        self.server.server_close()

"""``python -m kaos_runtime.engines.llamacpp_server``: llama-cpp-python's server with llama-server's API keys.

``kaos up`` runs the llama.cpp server image as llama-cpp-python's server (kaos.local.llamacpp
translates the flags and starts this program by name; this module takes llama-cpp-python's own).
The two check API keys differently: llama-server reads them from ``LLAMA_API_KEY`` (the modelapi
chart sets it from the ModelAPI's spec.auth.apiKeys Secret; read here with the rule every KAOS
endpoint reads that Secret with, core.api_keys) and leaves ``/``, ``/health``,
``/v1/health``, ``/models`` and ``/v1/models`` open, while llama-cpp-python takes one key and
guards ``/v1/models``, the chart's readiness probe. So the key check here is llama-server's:
the same variable, the same open paths, any other request without one of the keys (``Authorization:
Bearer <key>``, or ``X-Api-Key``) answered 401 with llama-server's body. Keys are compared in
constant time and never logged. On SIGTERM, requests still open (a client holding a streamed
completion) get ``SHUTDOWN_GRACE`` seconds, then are cut, as in the runtime.

llama-cpp-python runs one completion at a time behind a lock that every model route takes,
``GET /v1/models`` included, and by default (``interrupt_requests``) a streamed completion
stops with ``[DONE]`` as soon as another request waits for that lock. Its readiness probe (every
2 s under ``kaos up``) then cut every answer that took longer, often before its first token: an
agent got an empty answer, with no error. llama-server queues requests and answers its probe
at once, so here ``interrupt_requests`` defaults to false (a request waits for the one running)
and ``ModelList`` answers ``/v1/models`` and ``/models`` without the lock.
"""

from __future__ import annotations

import argparse
import hmac
import json
import os

from ..core.api_keys import parse_api_keys

OPEN_PATHS = frozenset({"/", "/health", "/v1/health", "/models", "/v1/models"})
# Seconds open requests get after SIGTERM; below the local supervisor's STOP_GRACE, which then kills.
SHUTDOWN_GRACE = 3.0
REFUSAL = json.dumps({"error": {"message": "Invalid API Key", "type": "authentication_error", "code": 401}}).encode()


def api_keys(value: str) -> list[bytes]:
    """``LLAMA_API_KEY``: the keys (core.api_keys.parse_api_keys), as bytes to compare."""
    return [key.encode() for key in parse_api_keys(value)]


def _given_key(headers: list[tuple[bytes, bytes]]) -> bytes:
    found = dict(headers)
    value = found.get(b"authorization") or found.get(b"x-api-key") or b""
    return value[len(b"Bearer "):] if value.startswith(b"Bearer ") else value


class KeyCheck:
    """ASGI middleware: llama-server's API key rule in front of llama-cpp-python's app."""

    def __init__(self, app, keys: list[bytes]) -> None:
        self.app = app
        self.keys = keys

    async def __call__(self, scope, receive, send) -> None:
        if (scope["type"] != "http" or not self.keys or scope["path"] in OPEN_PATHS
                or scope["method"] == "OPTIONS"):
            await self.app(scope, receive, send)
            return
        given = _given_key(scope["headers"])
        matched = False
        for key in self.keys:  # every key compared, in constant time each
            matched = hmac.compare_digest(given, key) or matched
        if matched:
            await self.app(scope, receive, send)
            return
        await send({"type": "http.response.start", "status": 401, "headers": [
            (b"content-type", b"application/json; charset=utf-8"), (b"content-length", str(len(REFUSAL)).encode())]})
        await send({"type": "http.response.body", "body": REFUSAL})


class ModelList:
    """ASGI middleware: ``GET /v1/models`` and ``/models`` answered from the aliases, without
    waiting for (or interrupting) a running completion."""

    def __init__(self, app, aliases: list[str]) -> None:
        self.app = app
        self.body = json.dumps({"object": "list", "data": [
            {"id": alias, "object": "model", "owned_by": "me", "permissions": []} for alias in aliases]}).encode()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope["method"] != "GET" or scope["path"] not in ("/v1/models", "/models"):
            await self.app(scope, receive, send)
            return
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", b"application/json"), (b"content-length", str(len(self.body)).encode())]})
        await send({"type": "http.response.body", "body": self.body})


def serve(app, host: str, port: int) -> None:
    """uvicorn, as llama-cpp-python's own __main__ runs it, with a bounded graceful shutdown."""
    import uvicorn

    uvicorn.run(app, host=host, port=port, timeout_graceful_shutdown=SHUTDOWN_GRACE)


def main(argv: list[str] | None = None) -> None:
    from llama_cpp.server.app import create_app
    from llama_cpp.server.cli import add_args_from_model, parse_model_from_args
    from llama_cpp.server.settings import ModelSettings, ServerSettings, Settings

    parser = argparse.ArgumentParser(prog="python -m kaos_runtime.engines.llamacpp_server",
                                     description="llama-cpp-python's server with llama-server's API keys")
    add_args_from_model(parser, Settings)
    parser.set_defaults(interrupt_requests=False)
    args = parser.parse_args(argv)
    server = parse_model_from_args(ServerSettings, args)
    model = parse_model_from_args(ModelSettings, args)
    app = create_app(server_settings=server, model_settings=[model])
    keys = api_keys(os.environ.pop("LLAMA_API_KEY", ""))
    if keys:
        print(f"API keys: {len(keys)} loaded; /health and /v1/models stay open", flush=True)
    serve(ModelList(KeyCheck(app, keys), [model.model_alias or model.model]), server.host, server.port)


if __name__ == "__main__":
    main()

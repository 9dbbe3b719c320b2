"""One process on 127.0.0.1:PORT: the gateway, under /_kaos/ the admin API the CLI uses, and
the web console (kaos.console) at / and under /_console/.

``/_kaos`` and ``/_console`` cannot be namespaces (namespaces are DNS labels), so nothing collides.
Every request passes the request guard first (kaos.request_guard: the Host, the site, the body's
type); the admin API wants this run's token too (``Authorization: Bearer``, from the state file),
but for /_kaos/health and /_kaos/metrics, which say nothing of the resources.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import os
import signal
import time
from pathlib import Path
from typing import Callable
from urllib.parse import parse_qsl

import uvicorn

from kaos.api import KIND_ALIASES, SERVED_KINDS, namespace_of
from kaos.console import Console, LocalCatalog
from kaos.console.signin import SignIn, SignInConfig
from kaos.local.controlplane import ControlPlane
from kaos.local.gateway import Gateway
from kaos.local.manifests import CORE_KINDS, ApplyError
from kaos.local.ports import LOOPBACK, PortInUse, check_port_free
from kaos.local.state import STATE_FILE, State, clear_state, new_token, write_state
from kaos.local.store import validate_documents
from kaos.metrics import CONTENT_TYPE, exposition
from kaos.proxy import read_body, send_json
from kaos.reconcile import Ref
from kaos.request_guard import Policy, RequestGuard
from kaos.routes import parse_trigger_path
from kaos.settings import variable
from kaos.triggers.webhook import MAX_BODY_BYTES, WebhookCall

ADMIN_PREFIX = "/_kaos/"
OPEN_ADMIN_CALLS = ("health",)  # and metrics (answered before): reconcile counts by kind and phase, no names
log = logging.getLogger("kaos.local")


class App:
    """ASGI entry: admin API under /_kaos/, the console at / and /_console/, the rest through the gateway.
    ``token``: what the admin API's calls (but health and metrics) must carry."""

    def __init__(self, control: ControlPlane, port: int, shutdown: Callable[[], None], token: str,
                 signin: SignIn | None = None):
        self.control = control
        self.port = port
        self.shutdown = shutdown
        self._authorization = f"Bearer {token}".encode()
        self.gateway = Gateway(control.backend_of)
        self.console = Console(LocalCatalog(control.list), signin=signin)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return
        path = scope["path"]
        if path == ADMIN_PREFIX + "metrics":  # reconcile counts and durations (kaos.metrics)
            body = exposition()
            await send({"type": "http.response.start", "status": 200, "headers": [
                (b"content-type", CONTENT_TYPE.encode()), (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
        elif path.startswith(ADMIN_PREFIX):
            await self._admin(scope, receive, send, path[len(ADMIN_PREFIX):])
        elif self.console.serves(path):
            await self.console(scope, receive, send)
        elif parse_trigger_path(path) is not None:
            await self._webhook(scope, receive, send, *parse_trigger_path(path))
        else:
            await self.gateway(scope, receive, send)

    async def _webhook(self, scope, receive, send, namespace: str, name: str) -> None:
        """POST /<namespace>/trigger/<name>: a Trigger's webhook (kaos.triggers.webhook says what it answers)."""
        if scope["method"] != "POST":
            await send_json(send, 405, {"error": "method not allowed", "detail": "a trigger's webhook takes POST"},
                            headers=[(b"allow", b"POST")])
            return
        headers = {key.decode("latin-1").lower(): value.decode("latin-1") for key, value in scope["headers"]}
        body = await read_body(receive, limit=MAX_BODY_BYTES)
        call = WebhookCall.read(body, lambda header: headers.get(header.lower()))
        answer = await self.control.trigger_webhook(namespace, name, call)
        await send_json(send, answer.status, answer.body,
                        headers=[(key.lower().encode(), value.encode()) for key, value in answer.headers.items()])

    async def _admin(self, scope, receive, send, action: str) -> None:
        method = scope["method"]
        if action not in OPEN_ADMIN_CALLS and not self._authorized(scope):
            await send_json(send, 401, {"error": "the admin API needs this run's token (Authorization: Bearer "
                                                 f"<token>): the \"token\" of {STATE_HINT}, which the kaos CLI sends"},
                            headers=[(b"www-authenticate", b'Bearer realm="kaos"')])
            return
        query = dict(parse_qsl((scope.get("query_string") or b"").decode()))
        try:
            body = json.loads(await read_body(receive) or b"{}") if method == "POST" else {}
        except json.JSONDecodeError:
            body = None
        if not isinstance(body, dict):
            await send_json(send, 400, {"error": "the body must be a JSON object"})
            return
        status, payload = await self._handle(method, action, query, body)
        await send_json(send, status, payload)

    def _authorized(self, scope) -> bool:
        given = next((value for name, value in scope["headers"] if name == b"authorization"), b"")
        return hmac.compare_digest(given, self._authorization)

    async def _handle(self, method: str, action: str, query: dict, body: dict) -> tuple[int, dict]:
        control = self.control
        if (method, action) == ("GET", "health"):
            return 200, {"status": "ok", "pid": os.getpid(), "port": self.port}
        if (method, action) == ("POST", "apply"):
            documents = [(item.get("manifest"), item.get("source") or "<request>") for item in body.get("documents", [])]
            try:
                return 200, {"results": control.apply(documents)}
            except ApplyError as error:
                return 422, {"error": str(error)}
        if (method, action) == ("POST", "delete"):
            kind = KIND_ALIASES.get(str(body.get("kind", "")).lower(), body.get("kind"))
            if kind not in (*SERVED_KINDS, *CORE_KINDS):
                return 400, {"error": f"unknown kind {body.get('kind')!r}; use agent, modelapi, mcpserver or trigger"}
            ref = Ref(kind, namespace_of(body), body.get("name", ""))
            if control.delete(ref):
                return 200, {"deleted": resource_summary_of(ref)}
            return 404, {"error": f"{kind} {ref.name!r} not found in namespace {ref.namespace!r}"}
        if (method, action) == ("GET", "resources"):
            kind = KIND_ALIASES.get(query.get("kind", "").lower()) if query.get("kind") else None
            return 200, {"items": control.list(kind, query.get("namespace") or None)}
        if (method, action) == ("GET", "deployments"):
            return 200, {"items": control.deployments()}
        if (method, action) == ("POST", "trigger-run"):
            answer = await control.run_trigger(namespace_of(body), str(body.get("name", "")))
            if answer.status >= 400:
                return answer.status, {"error": answer.body.get("detail", "the run did not start")}
            return 200, answer.body
        if (method, action) == ("POST", "down"):
            asyncio.get_running_loop().call_soon(self.shutdown)
            return 202, {"status": "stopping"}
        return 404, {"error": f"unknown admin call {method} {ADMIN_PREFIX}{action}"}


STATE_HINT = f"${variable('home')}/{STATE_FILE}"


def guarded(app: App, port: int, allowed_hosts: tuple[str, ...]) -> RequestGuard:
    """The app behind the request guard: Host one of the loopback names or ``allowed_hosts``, no
    request from another site, JSON bodies (a Trigger's webhook takes any: CI systems sign it)."""
    hint = f"to allow a name, start with `kaos up --allow-host NAME` or set {variable('allowed_hosts')}"
    return RequestGuard(app, Policy(hosts=allowed_hosts, port=port, hint=hint,
                                    any_body=lambda path: parse_trigger_path(path) is not None))


def resource_summary_of(ref: Ref) -> dict:
    return {"kind": ref.kind, "namespace": ref.namespace, "name": ref.name}


SHUTDOWN_GRACE = 3.0  # seconds open requests and streams get after SIGTERM or `kaos down`


class _Server(uvicorn.Server):
    """uvicorn without its own signal handling: the control plane stops its processes first."""

    @contextlib.contextmanager
    def capture_signals(self):
        yield


async def serve(
    home: Path,
    port: int,
    settings,
    documents: list[tuple[dict, str]] | None = None,
    listener: Callable | None = None,
    ready: Callable[[ControlPlane], None] | None = None,
) -> None:
    """Run the control plane until SIGINT/SIGTERM or POST /_kaos/down; stops every process it started."""
    check_port_free(port)
    home.mkdir(parents=True, exist_ok=True)
    control = ControlPlane(home, settings)
    if listener is not None:
        control.listeners.append(listener)
    if documents:
        validate_documents(documents, settings.crd_dir)  # refuse bad manifests before anything starts
    server: _Server | None = None

    def shutdown() -> None:
        if server is not None:
            server.should_exit = True

    token = new_token()
    signin_config = SignInConfig.of(settings.console_oidc_issuer, settings.console_oidc_client_id,
                                    settings.console_oidc_audience, settings.console_oidc_scopes,
                                    settings.console_oidc_groups_claim)
    signin = SignIn(signin_config) if signin_config else None
    app = App(control, port, shutdown, token, signin)
    server = _Server(uvicorn.Config(
        guarded(app, port, settings.allowed_hosts), host=LOOPBACK, port=port, log_level="warning", access_log=False,
        lifespan="off", timeout_keep_alive=30, http="httptools", loop="asyncio",
        timeout_graceful_shutdown=SHUTDOWN_GRACE,  # a client holding a proxied stream cannot stall a stop
    ))
    control.start()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, shutdown)
    serving = asyncio.create_task(server.serve())
    try:
        while not server.started:
            if serving.done():
                await serving
                raise PortInUse(f"the control plane could not listen on {LOOPBACK}:{port}")
            await asyncio.sleep(0.02)
        write_state(home, State(pid=os.getpid(), port=port, started=time.time(), token=token))
        if documents:
            control.apply(documents)
        if ready is not None:
            ready(control)
        await serving
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        await control.stop()
        await app.gateway.aclose()
        if signin is not None:
            await signin.aclose()
        clear_state(home)

"""The operator's webhook server for Triggers: POST /<namespace>/trigger/<name> on
KAOS_TRIGGER_PORT (the platform chart routes the Gateway's /<namespace>/trigger/<name> to it);
kaos.triggers.webhook says what it answers."""

from __future__ import annotations

import aiohttp.web

from kaos.api import TRIGGER
from kaos.reconcile import Ref
from kaos.routes import parse_trigger_path
from kaos.trigger_runner.engine import TriggerEngine
from kaos.triggers.webhook import MAX_BODY_BYTES, WebhookCall


def webhook_app(engine: TriggerEngine) -> aiohttp.web.Application:
    async def call(request: aiohttp.web.Request) -> aiohttp.web.Response:
        found = parse_trigger_path(request.path)
        if found is None:
            return aiohttp.web.json_response({"error": "not found", "detail": "POST /<namespace>/trigger/<name>"},
                                             status=404)
        if request.content_length is not None and request.content_length > MAX_BODY_BYTES:
            return aiohttp.web.json_response({"detail": f"the body is larger than {MAX_BODY_BYTES} bytes"}, status=413)
        body = await request.content.read(MAX_BODY_BYTES + 1)
        answer = await engine.webhook(Ref(TRIGGER, *found), WebhookCall.read(body, request.headers.get))
        return aiohttp.web.json_response(answer.body, status=answer.status, headers=answer.headers)

    app = aiohttp.web.Application(client_max_size=MAX_BODY_BYTES + 1)
    app.router.add_post("/{namespace}/trigger/{name}", call)
    return app

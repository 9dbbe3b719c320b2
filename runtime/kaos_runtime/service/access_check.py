"""``AccessCheck``: the ASGI middleware that applies ``spec.access`` to every request BearerAuth
let in (core/grants.py: which verb a path needs; core/principal.py: whether the caller holds
it). A caller without the grant gets 403 with a detail naming the missing grant, and the
refusal is an audit event; a read by an admin is one too (core/audit.py)."""

from __future__ import annotations

import json

from ..core.audit import AuditTrail
from ..core.auth import ACTING
from ..core.grants import verbs_of
from ..core.principal import Access

ADMIN_READS = ("read", "admin")


class AccessCheck:
    def __init__(self, app, access: Access, audit: AuditTrail, agent: str) -> None:
        self.app, self.access, self.audit, self.agent = app, access, audit, agent

    async def __call__(self, scope, receive, send) -> None:
        who = scope.get(ACTING) if scope["type"] == "http" else None
        if who is None:  # not HTTP, an exempt path, or an open agent
            await self.app(scope, receive, send)
            return
        method, path = scope["method"], scope["path"]
        verbs = verbs_of(method, path)
        refused = self.access.grant_refusal(who, verbs, self.agent)
        if refused is not None:
            self.audit.record("call.refused", who.text, f"{method} {path}", grant="|".join(verbs), detail=refused)
            body = json.dumps({"detail": refused}).encode()
            await send({"type": "http.response.start", "status": 403,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        if method == "GET" and any(verb in ADMIN_READS for verb in verbs) and self.access.is_admin(who):
            query = scope.get("query_string", b"").decode("latin-1")
            self.audit.record("admin.read", who.text, path + (f"?{query}" if query else ""))
        await self.app(scope, receive, send)

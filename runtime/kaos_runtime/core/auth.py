"""Bearer authentication of a runtime's endpoints (``AUTH_*``; see docs/runtime.md, "Authentication").

``BearerAuth`` is an ASGI middleware: a request to any path but the exempt ones (the probes,
``/metrics``, the agent cards and ``/openapi.json``) needs ``Authorization: Bearer <token>``,
where the token is one of the API keys (``AUTH_API_KEYS``, from a Secret) or, with
``AUTH_OIDC_ISSUER`` (or ``AUTH_OIDC_JWKS_URL``), an access token of the OpenID Connect issuer
(core/oidc.py: its keys, audience, issuer and expiry). A missing, wrong or expired token gets
401 with a ``WWW-Authenticate`` header; the principal of an accepted one (``key:<n>``, the key's
place in the list, or ``user:<name>`` with its ``group:<name>`` groups) is put in
``scope["kaos.principal"]`` (budgets count per caller by it), and the principal the request acts
for in ``scope["kaos.acting"]`` (core/principal.py): the same, or, when the request carries an
on-behalf-of header signed with the very token it authenticated with, for this agent, and
recent, the person it names relayed by that principal (``key:3 via key:1``), with the groups
it carries (core/on_behalf.py). No token or key is
ever logged or echoed: the 401 body says only what kind of problem it was. ``acting_of`` is the
principal a route acts for (on an open agent, ``anonymous``).

``CredentialedPeers`` wraps the peer directory so that a delegation carries the agent's own
credential (``AUTH_OUTBOUND_TOKEN``).
"""

from __future__ import annotations

import hmac
import json
import time
from typing import Any

from .forwarding import Forwarding
from .oidc import OidcVerifier, TokenRefused
from .on_behalf import HEADER as ON_BEHALF_HEADER
from .on_behalf import sign, verify
from .principal import ANONYMOUS, Principal, element, relayed
from .settings import AuthSettings

EXEMPT_PATHS = frozenset({"/health", "/ready", "/metrics", "/.well-known/agent", "/.well-known/agent.json",
                          "/.well-known/agent-card.json", "/openapi.json"})
PRINCIPAL, ACTING = "kaos.principal", "kaos.acting"  # where BearerAuth puts them in the ASGI scope
_ON_BEHALF = ON_BEHALF_HEADER.lower().encode()


def caller_of(request) -> tuple[str, ...]:
    """The caller identities a request's per-caller budgets count against.

    With authentication, the authenticated principal (``scope["kaos.principal"]``) always counts,
    so no header moves a caller off its own budget; a request that also names a Trigger
    (``X-KAOS-Trigger``: a control plane's run, sent with the Trigger's ``spec.credentials``)
    counts against ``trigger:<name>`` as well, so each Trigger keeps a budget of its own when
    Triggers share one credential. Without authentication the headers are the caller's word:
    the agent that delegated (``X-KAOS-Delegated-By``, as ``agent:<name>``), else the Trigger
    (``trigger:<name>``), else ``anonymous``."""
    trigger = request.headers.get("x-kaos-trigger")
    principal = request.scope.get("kaos.principal")
    if principal:
        return (str(principal), f"trigger:{trigger}") if trigger else (str(principal),)
    sender = request.headers.get("x-kaos-delegated-by")
    if sender:
        return (f"agent:{sender}",)
    return (f"trigger:{trigger}",) if trigger else (ANONYMOUS,)


class Unauthorized(Exception):
    """Why a request is refused; the text never holds the token."""

    def __init__(self, error: str, description: str) -> None:
        self.error, self.description = error, description
        super().__init__(description)


class Verifier:
    """Turns a bearer token into a principal and its groups, or raises Unauthorized."""

    def __init__(self, settings: AuthSettings) -> None:
        self.settings = settings
        self._keys = [(name, key.encode()) for name, key in settings.api_keys()]
        self._oidc = None
        if settings.oidc_enabled:
            self._oidc = OidcVerifier(settings.oidc_issuer, settings.oidc_audience, settings.oidc_jwks_url,
                                      settings.oidc_user_claim, settings.oidc_groups_claim,
                                      settings.oidc_leeway_seconds)

    @property
    def enabled(self) -> bool:
        return bool(self._keys or self._oidc)

    async def principal(self, token: str) -> tuple[str, frozenset[str]]:
        """``key:<n>`` or ``user:<name>``, and the user's groups (none for a key)."""
        given = token.encode()
        matched = None
        for name, key in self._keys:  # every key compared, in constant time each
            if hmac.compare_digest(given, key) and matched is None:
                matched = name
        if matched is not None:
            return f"key:{matched}", frozenset()
        if self._oidc is not None and token.count(".") == 2:
            try:
                user = await self._oidc.user(token)
            except TokenRefused as refused:
                raise Unauthorized("invalid_token", str(refused)) from None
            return element("user", user.name), frozenset(element("group", group) for group in user.groups)
        raise Unauthorized("invalid_token", "the token is not valid")


def _refusal(error: Unauthorized | None) -> tuple[list, bytes]:
    challenge = 'Bearer realm="kaos"'
    if error is not None:
        challenge += f', error="{error.error}", error_description="{error.description}"'
    detail = error.description if error is not None else "authentication required: send Authorization: Bearer <token>"
    body = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
               (b"www-authenticate", challenge.encode())]
    return headers, body


class BearerAuth:
    """ASGI middleware; with no key and no JWKS configured it passes everything through.
    ``agent``: this agent's name, which an on-behalf-of header must be signed for (empty: such
    headers are ignored)."""

    def __init__(self, app, verifier: Verifier, exempt: frozenset[str] = EXEMPT_PATHS, agent: str = "") -> None:
        self.app = app
        self.verifier = verifier
        self.exempt = exempt
        self.agent = agent

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or not self.verifier.enabled or scope["path"] in self.exempt:
            await self.app(scope, receive, send)
            return
        token = on_behalf = None
        for name, value in scope["headers"]:
            if name == b"authorization" and token is None:
                scheme, _, credentials = value.decode("latin-1").partition(" ")
                token = credentials.strip() if scheme.lower() == "bearer" and credentials.strip() else ""
            elif name == _ON_BEHALF and on_behalf is None:
                on_behalf = value.decode("latin-1")
        error = None
        if token:
            try:
                principal, groups = await self.verifier.principal(token)
            except Unauthorized as refused:
                error = refused
            else:
                scope[PRINCIPAL] = principal
                scope[ACTING] = self._acting(principal, groups, token, on_behalf)
                await self.app(scope, receive, send)
                return
        headers, body = _refusal(error)
        await send({"type": "http.response.start", "status": 401, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    def _acting(self, principal: str, groups: frozenset[str], token: str, on_behalf: str | None) -> Principal:
        """The authenticated principal (with its groups), or the person a valid on-behalf-of
        names, with the groups it carries, relayed by it."""
        method = principal.partition(":")[0]
        said = verify(on_behalf, token, self.agent, time.time()) if on_behalf and self.agent else None
        if said is None:
            return Principal(principal, method, (), groups)
        return relayed(said.person, principal, method, said.groups)


def acting_of(request) -> Principal:
    """The principal a request acts for: BearerAuth's; on an open agent ``anonymous``, via the
    caller's unverified word when it gives one (the delegating agent, the Trigger: budget.caller_of)."""
    acting = request.scope.get(ACTING)
    if acting is not None:
        return acting
    word = caller_of(request)[0]
    if word == ANONYMOUS:
        return Principal()
    kind, _, name = word.partition(":")
    return Principal(ANONYMOUS, "none", (element(kind, name),))


def on_behalf_headers(token: str, person: str, target: str, groups: frozenset[str] = frozenset()) -> dict[str, str]:
    """The headers a request to ``target`` (a peer agent, an MCP server) carries for ``person``
    and their ``groups`` when it authenticates with ``token``: the bearer token and the
    on-behalf-of header signed with it (none without a token)."""
    if not token:
        return {}
    return {"Authorization": f"Bearer {token}", ON_BEHALF_HEADER: sign(person, groups, token, target, time.time())}


class CredentialedPeers(Forwarding):
    """A peer directory whose delegations carry ``Authorization: Bearer <AUTH_OUTBOUND_TOKEN>`` and
    the on-behalf-of header for the principal the run acts for."""

    def __init__(self, inner: Any, token: str) -> None:
        super().__init__(inner)
        self._token = token

    async def delegate(self, peer, messages, depth, sender, extra_headers=None, on_behalf_of: str = ANONYMOUS,
                       groups: frozenset[str] = frozenset()):
        # An A2A peer signs for the name on its card (a KAOS agent's AGENT_NAME), a KAOS peer for its own.
        target = getattr(peer, "card_name", "") or peer.name
        credentials = on_behalf_headers(self._token, on_behalf_of, target, groups)
        return await self._inner.delegate(peer, messages, depth, sender, {**(extra_headers or {}), **credentials})

"""Bearer authentication of a runtime's endpoints (``AUTH_*``; see docs/runtime.md, "Authentication").

``BearerAuth`` is an ASGI middleware: a request to any path but the exempt ones (the probes,
``/metrics``, the agent cards and ``/openapi.json``) needs ``Authorization: Bearer <token>``,
where the token is one of the API keys (``AUTH_API_KEYS``, from a Secret) or, with ``AUTH_OIDC_JWKS_URL``, a JWT
signed by one of the issuer's keys (with ``AUTH_OIDC_ISSUER`` / ``AUTH_OIDC_AUDIENCE`` checked
when set). A missing, wrong or expired token gets 401 with a ``WWW-Authenticate`` header; the
principal of an accepted one (``key:<n>``, the key's place in the list, or ``jwt:<sub>``) is put in
``scope["kaos.principal"]`` (budgets count per caller by it), and the principal the request acts
for in ``scope["kaos.acting"]`` (core/principal.py): the same, or, when the request carries an
on-behalf-of header signed with the very token it authenticated with, for this agent, and
recent, the person it names relayed by that principal (``key:3 via key:1``). No token or key is
ever logged or echoed: the 401 body says only what kind of problem it was. ``acting_of`` is the
principal a route acts for (on an open agent, ``anonymous``).

``CredentialedPeers`` wraps the peer directory so that a delegation carries the agent's own
credential (``AUTH_OUTBOUND_TOKEN``).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import time
from typing import Any

from .budget import caller_of
from .forwarding import Forwarding
from .principal import ANONYMOUS, ON_BEHALF_HEADER, Principal, element, relayed, sign_on_behalf, verify_on_behalf
from .settings import AuthSettings

log = logging.getLogger("kaos_runtime.auth")

EXEMPT_PATHS = frozenset({"/health", "/ready", "/metrics", "/.well-known/agent", "/.well-known/agent.json",
                          "/.well-known/agent-card.json", "/openapi.json"})
JWT_ALGORITHMS = ["RS256", "RS384", "RS512", "ES256", "ES384", "PS256"]
JWKS_REFRESH_SECONDS = 300
PRINCIPAL, ACTING = "kaos.principal", "kaos.acting"  # where BearerAuth puts them in the ASGI scope
_ON_BEHALF = ON_BEHALF_HEADER.lower().encode()


class Unauthorized(Exception):
    """Why a request is refused; the text never holds the token."""

    def __init__(self, error: str, description: str) -> None:
        self.error, self.description = error, description
        super().__init__(description)


class Verifier:
    """Turns a bearer token into a principal, or raises Unauthorized."""

    def __init__(self, settings: AuthSettings) -> None:
        self.settings = settings
        self._keys = [(name, key.encode()) for name, key in settings.api_keys()]
        self._jwks = None
        if settings.oidc_jwks_url:
            from jwt import PyJWKClient

            self._jwks = PyJWKClient(settings.oidc_jwks_url, cache_jwk_set=True, lifespan=JWKS_REFRESH_SECONDS,
                                     timeout=5)

    @property
    def enabled(self) -> bool:
        return bool(self._keys or self._jwks)

    async def principal(self, token: str) -> str:
        given = token.encode()
        matched = None
        for name, key in self._keys:  # every key compared, in constant time each
            if hmac.compare_digest(given, key) and matched is None:
                matched = name
        if matched is not None:
            return f"key:{matched}"
        if self._jwks is not None and token.count(".") == 2:
            return await self._jwt(token)
        raise Unauthorized("invalid_token", "the token is not valid")

    async def _jwt(self, token: str) -> str:
        import jwt

        try:
            # The JWKS is fetched (and refreshed) over blocking HTTP: off the event loop.
            key = await asyncio.to_thread(self._jwks.get_signing_key_from_jwt, token)
            claims = jwt.decode(
                token, key.key, algorithms=JWT_ALGORITHMS,
                audience=self.settings.oidc_audience or None, issuer=self.settings.oidc_issuer or None,
                options={"verify_aud": bool(self.settings.oidc_audience), "require": ["exp"]},
                leeway=30,
            )
        except jwt.ExpiredSignatureError:
            raise Unauthorized("invalid_token", "the token has expired") from None
        except jwt.PyJWKClientConnectionError:
            log.warning("cannot fetch the issuer's keys from AUTH_OIDC_JWKS_URL")
            raise Unauthorized("invalid_token", "the token cannot be verified now") from None
        except (jwt.InvalidTokenError, jwt.PyJWKClientError):
            raise Unauthorized("invalid_token", "the token is not valid") from None
        return element("jwt", str(claims.get("sub", "")))


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
                principal = await self.verifier.principal(token)
            except Unauthorized as refused:
                error = refused
            else:
                scope[PRINCIPAL] = principal
                scope[ACTING] = self._acting(principal, token, on_behalf)
                await self.app(scope, receive, send)
                return
        headers, body = _refusal(error)
        await send({"type": "http.response.start", "status": 401, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    def _acting(self, principal: str, token: str, on_behalf: str | None) -> Principal:
        """The authenticated principal, or the person a valid on-behalf-of names, relayed by it."""
        method = principal.partition(":")[0]
        person = verify_on_behalf(on_behalf, token, self.agent, time.time()) if on_behalf and self.agent else None
        return relayed(person, principal, method) if person is not None else Principal(principal, method)


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


def on_behalf_headers(token: str, person: str, target: str) -> dict[str, str]:
    """The headers a request to the agent ``target`` carries for ``person`` when it authenticates
    with ``token``: the bearer token and the on-behalf-of header signed with it (none without a token)."""
    if not token:
        return {}
    return {"Authorization": f"Bearer {token}", ON_BEHALF_HEADER: sign_on_behalf(person, token, target, time.time())}


class CredentialedPeers(Forwarding):
    """A peer directory whose delegations carry ``Authorization: Bearer <AUTH_OUTBOUND_TOKEN>`` and
    the on-behalf-of header for the principal the run acts for."""

    def __init__(self, inner: Any, token: str) -> None:
        super().__init__(inner)
        self._token = token

    async def delegate(self, peer, messages, depth, sender, extra_headers=None, on_behalf_of: str = ANONYMOUS):
        # An A2A peer signs for the name on its card (a KAOS agent's AGENT_NAME), a KAOS peer for its own.
        target = getattr(peer, "card_name", "") or peer.name
        credentials = on_behalf_headers(self._token, on_behalf_of, target)
        return await self._inner.delegate(peer, messages, depth, sender, {**(extra_headers or {}), **credentials})

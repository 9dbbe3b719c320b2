"""Signing people in to the console with OpenID Connect (docs/local.md, "Sign-in").

The browser runs the authorization-code flow with PKCE (S256): it makes the code verifier, the
state and the nonce, keeps them in the tab's sessionStorage, goes to the issuer's authorization
endpoint and, back on the console with a code, checks the state. The code is exchanged here,
not in the browser: the page's Content-Security-Policy lets it talk to its own origin only
(``connect-src 'self'``), and most issuers answer no cross-origin requests at their token
endpoint. ``SignIn.exchange`` posts the code and its verifier to the token endpoint as the
public client ``client_id`` (no secret: a browser cannot keep one), checks the ID token with
PyJWT against the issuer's keys (signature, issuer, audience = the client, expiry) and its nonce,
and hands the tokens back to the tab. The console keeps nothing: the tokens live in the tab's
sessionStorage, and the access token is what the page sends to the agents, whose own
``spec.access`` decides what the person may see and do. Signing out, the tab forgets them and,
when the issuer names an end_session_endpoint, ends the person's session there too (RP-Initiated
Logout 1.0: the ID token as id_token_hint, the console's page as post_logout_redirect_uri).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import httpx
import jwt

ALGORITHMS = ["RS256", "RS384", "RS512", "ES256", "ES384", "PS256"]
LEEWAY_SECONDS = 30
KEYS_REFRESH_SECONDS = 10.0  # the least time between two fetches of the issuer's key set
MAX_DOCUMENT_BYTES = 1 << 20
NAME_CLAIMS = ("name", "preferred_username", "email", "sub")
EXCHANGE_FIELDS = ("code", "code_verifier", "redirect_uri", "nonce")


class SignInError(Exception):
    """A sign-in that cannot complete; ``status`` is the console's answer (400: the request,
    502: the issuer), the message says why in words."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class SignInConfig:
    """Whom the console sends people to: the issuer, the console's client id there, the
    audience its access tokens are for (the agents' ``spec.auth.oidc.audience``; empty: none asked
    for), the scopes asked for, and the ID token's claim holding the groups."""

    issuer: str
    client_id: str
    audience: str = ""
    scopes: str = "openid profile"
    groups_claim: str = "groups"

    @classmethod
    def of(cls, issuer: str = "", client_id: str = "", audience: str = "", scopes: str = "",
           groups_claim: str = "") -> SignInConfig | None:
        """The configuration, None when no issuer is given (no sign-in); ValueError when one of
        issuer and client id is given without the other, or the issuer is not an http(s) URL."""
        issuer, client_id = issuer.strip().rstrip("/"), client_id.strip()
        if not issuer and not client_id:
            return None
        if not issuer or not client_id:
            raise ValueError("console sign-in needs both the issuer and the client id "
                             f"(given: issuer {issuer!r}, client id {client_id!r})")
        if not issuer.startswith(("https://", "http://")):
            raise ValueError(f"the console's OIDC issuer {issuer!r} is not an http(s) URL")
        scopes = " ".join(scopes.split()) or cls.scopes
        if "openid" not in scopes.split():
            scopes = "openid " + scopes
        return cls(issuer, client_id, audience.strip(), scopes, groups_claim.strip() or cls.groups_claim)


def exchange_request(body: object) -> dict[str, str]:
    """The fields of a code exchange the page posts; SignInError naming a missing one."""
    if not isinstance(body, dict):
        raise SignInError("a code exchange is a JSON object with " + ", ".join(EXCHANGE_FIELDS))
    fields = {}
    for name in EXCHANGE_FIELDS:
        value = body.get(name)
        if not isinstance(value, str) or not value or len(value) > 4096:
            raise SignInError(f"the code exchange has no {name!r} (a non-empty string)")
        fields[name] = value
    if not 43 <= len(fields["code_verifier"]) <= 128:
        raise SignInError("the code verifier must have 43 to 128 characters (RFC 7636)")
    return fields


def person(claims: dict, groups_claim: str) -> dict:
    """Who verified ID token claims name: ``{"subject", "name", "groups"}`` (the name: the first
    of name, preferred_username, email, sub that is a string)."""
    name = next((claims[claim] for claim in NAME_CLAIMS if isinstance(claims.get(claim), str) and claims[claim]), "")
    groups = claims.get(groups_claim, [])
    if isinstance(groups, str):
        groups = [groups]
    if not isinstance(groups, list):
        groups = []
    return {"subject": str(claims.get("sub", "")), "name": name, "groups": sorted(g for g in groups if isinstance(g, str))}


def end_session_endpoint(document: dict) -> str:
    """The discovery document's end_session_endpoint when it is an http(s) URL, else ""."""
    url = document.get("end_session_endpoint")
    return url if isinstance(url, str) and url.startswith(("https://", "http://")) else ""


def verify_id_token(token: str, key, config: SignInConfig, nonce: str) -> dict:
    """The claims of an ID token signed with ``key``, for this client, from this issuer, not
    expired, carrying ``nonce``; SignInError otherwise (PyJWT checks the JOSE parts)."""
    try:
        claims = jwt.decode(token, key, algorithms=ALGORITHMS, audience=config.client_id, issuer=config.issuer,
                            leeway=LEEWAY_SECONDS, options={"require": ["exp", "iat", "sub"]})
    except jwt.PyJWTError as error:
        raise SignInError(f"the issuer's ID token is not valid: {error}", 502) from None
    if claims.get("nonce") != nonce:
        raise SignInError("the ID token does not carry this sign-in's nonce (a replayed or mixed-up answer): "
                          "sign in again", 400)
    if "azp" in claims and claims["azp"] != config.client_id:
        raise SignInError(f"the ID token was issued to {claims['azp']!r}, not to this console", 502)
    return claims


class SignIn:
    """The console's side of sign-in against one issuer: its discovery document and keys
    (fetched once, the keys again when a token names one the set lacks) and the code exchange."""

    def __init__(self, config: SignInConfig, http: httpx.AsyncClient | None = None):
        self.config = config
        self.http = http or httpx.AsyncClient(timeout=15, follow_redirects=False)
        self._discovery: dict | None = None
        self._keys: jwt.PyJWKSet | None = None
        self._keys_fetched = 0.0

    async def aclose(self) -> None:
        await self.http.aclose()

    async def _get_json(self, url: str, what: str) -> dict:
        try:
            answer = await self.http.get(url, headers={"accept": "application/json"})
        except httpx.HTTPError as error:
            raise SignInError(f"the issuer {self.config.issuer} does not answer ({what}): {error}", 502) from None
        if answer.status_code != 200 or len(answer.content) > MAX_DOCUMENT_BYTES:
            raise SignInError(f"the issuer's {what} answered HTTP {answer.status_code} at {url}", 502)
        try:
            document = answer.json()
        except ValueError:
            raise SignInError(f"the issuer's {what} at {url} is not JSON", 502) from None
        if not isinstance(document, dict):
            raise SignInError(f"the issuer's {what} at {url} is not a JSON object", 502)
        return document

    async def discovery(self) -> dict:
        if self._discovery is None:
            url = self.config.issuer + "/.well-known/openid-configuration"
            document = await self._get_json(url, "discovery document")
            if document.get("issuer", "").rstrip("/") != self.config.issuer:
                raise SignInError(f"the discovery document at {url} names the issuer {document.get('issuer')!r}, "
                                  f"not {self.config.issuer!r}", 502)
            for field in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
                if not isinstance(document.get(field), str):
                    raise SignInError(f"the discovery document at {url} has no {field}", 502)
            self._discovery = document
        return self._discovery

    async def public(self) -> dict:
        """What the page needs to send a person to the issuer (nothing secret), and to end their
        session there when they sign out: ``end_session_endpoint`` (OpenID Connect RP-Initiated
        Logout), empty when the issuer's discovery document names none."""
        document = await self.discovery()
        return {"enabled": True, "issuer": self.config.issuer, "client_id": self.config.client_id,
                "authorization_endpoint": document["authorization_endpoint"], "scope": self.config.scopes,
                "audience": self.config.audience, "end_session_endpoint": end_session_endpoint(document)}

    async def _key(self, token: str):
        try:
            kid = jwt.get_unverified_header(token).get("kid")
        except jwt.PyJWTError as error:
            raise SignInError(f"the issuer's ID token is not a JWT: {error}", 502) from None
        for attempt in (0, 1):
            stale = self._keys is None or (attempt and time.monotonic() - self._keys_fetched >= KEYS_REFRESH_SECONDS)
            if stale:
                document = await self._get_json((await self.discovery())["jwks_uri"], "key set")
                try:
                    self._keys = jwt.PyJWKSet.from_dict(document)
                except jwt.PyJWTError as error:
                    raise SignInError(f"the issuer's key set is not usable: {error}", 502) from None
                self._keys_fetched = time.monotonic()
            for key in self._keys.keys:
                if kid is None or key.key_id == kid:
                    return key.key
        raise SignInError(f"the ID token is signed with a key ({kid!r}) the issuer's key set does not hold", 502)

    async def exchange(self, body: object) -> dict:
        """The tokens and the person for a code the page got back: ``{"access_token",
        "id_token", "expires_at", "user"}``."""
        fields = exchange_request(body)
        document = await self.discovery()
        try:
            answer = await self.http.post(document["token_endpoint"], data={
                "grant_type": "authorization_code", "code": fields["code"], "redirect_uri": fields["redirect_uri"],
                "client_id": self.config.client_id, "code_verifier": fields["code_verifier"]},
                headers={"accept": "application/json"})
        except httpx.HTTPError as error:
            raise SignInError(f"the issuer's token endpoint does not answer: {error}", 502) from None
        try:
            tokens = answer.json()
        except ValueError:
            tokens = {}
        if answer.status_code != 200:
            reason = tokens.get("error_description") or tokens.get("error") or f"HTTP {answer.status_code}"
            raise SignInError(f"the issuer refused the sign-in: {reason}", 400 if answer.status_code < 500 else 502)
        id_token, access_token = tokens.get("id_token"), tokens.get("access_token")
        if not isinstance(id_token, str) or not isinstance(access_token, str):
            raise SignInError("the issuer's token answer has no id_token and access_token (is 'openid' a scope "
                              "of the client?)", 502)
        claims = verify_id_token(id_token, await self._key(id_token), self.config, fields["nonce"])
        lifetime = tokens.get("expires_in")
        expires_at = time.time() + float(lifetime) if isinstance(lifetime, (int, float)) else float(claims["exp"])
        return {"access_token": access_token, "id_token": id_token, "expires_at": int(expires_at),
                "user": person(claims, self.config.groups_claim)}

"""OpenID Connect access tokens (``spec.auth.oidc``; docs/security.md, "Identity").

``OidcVerifier`` turns a JWT the issuer signed into the user it names: ``user:<claim>`` (the
user claim, ``sub`` by default) with the groups of the groups claim (``groups`` by default).
The issuer's keys come from its JWKS (``AUTH_OIDC_JWKS_URL``, or the ``jwks_uri`` its discovery
document ``<issuer>/.well-known/openid-configuration`` names) and are kept in memory: a request
whose key is known costs no network call. A token signed by a key the set does not hold makes
the verifier fetch the set again (a rotated key), at most once per ``REFRESH_INTERVAL_SECONDS``;
the set is also fetched again when older than ``MAX_AGE_SECONDS``. The signature, issuer,
audience and expiry are checked by PyJWT; a token verified once is remembered until it expires
(a bounded map), so a warm agent checks a repeated token with one lookup.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

import httpx
import jwt

log = logging.getLogger("kaos_runtime.auth")

ALGORITHMS = ["RS256", "RS384", "RS512", "ES256", "ES384", "PS256"]
REFRESH_INTERVAL_SECONDS = 10.0  # the least time between two fetches of the key set
MAX_AGE_SECONDS = 3600.0  # a key set older than this is fetched again (a removed key stops working)
MAX_DOCUMENT_BYTES = 1 << 20  # a discovery document or key set larger than this is refused
VERIFIED_TOKENS = 4096  # how many verified tokens are remembered until they expire
MAX_GROUPS = 256  # a token naming more groups is refused (the rules compare each)


class TokenRefused(Exception):
    """Why a token is refused (a 401's description; never holds the token)."""


@dataclass(frozen=True)
class User:
    """Who a token names: the user claim's value and the groups claim's values."""

    name: str
    groups: frozenset[str]
    expires: float


def user_of(claims: dict, user_claim: str, groups_claim: str) -> User:
    """The user of verified claims; TokenRefused when the user claim is missing or not a string,
    or the groups claim is neither absent, a string nor a list of strings."""
    name = claims.get(user_claim)
    if not isinstance(name, str) or not name:
        raise TokenRefused(f"the token has no {user_claim!r} claim naming the user")
    groups = claims.get(groups_claim, [])
    if isinstance(groups, str):
        groups = [groups]
    if not isinstance(groups, list) or not all(isinstance(group, str) for group in groups) or len(groups) > MAX_GROUPS:
        raise TokenRefused(f"the token's {groups_claim!r} claim is not a list of group names")
    return User(name, frozenset(groups), float(claims["exp"]))


class OidcVerifier:
    """The issuer's keys, fetched when needed, and the check of one token against them."""

    def __init__(self, issuer: str, audience: str, jwks_url: str = "", user_claim: str = "sub",
                 groups_claim: str = "groups", leeway: float = 30.0, clock=time.time) -> None:
        self.issuer, self.audience, self.jwks_url = issuer, audience, jwks_url
        self.user_claim, self.groups_claim, self.leeway, self.clock = user_claim, groups_claim, leeway, clock
        self._keys: dict[str, jwt.PyJWK] = {}
        self._fetched_at = float("-inf")
        self._unreachable = False  # the last fetch failed
        self._lock = asyncio.Lock()
        self._verified: dict[str, User] = {}

    async def user(self, token: str) -> User:
        """The user a valid token names (remembered until it expires); TokenRefused otherwise."""
        now = self.clock()
        known = self._verified.get(token)
        if known is not None and known.expires + self.leeway > now:
            return known
        found = await self.check(token, now)
        if len(self._verified) >= VERIFIED_TOKENS:
            self._verified = {token: user for token, user in self._verified.items() if user.expires > now}
            if len(self._verified) >= VERIFIED_TOKENS:
                self._verified.clear()
        self._verified[token] = found
        return found

    async def check(self, token: str, now: float) -> User:
        """Verify ``token`` against the issuer's keys (fetched if its key is unknown), not remembered."""
        try:
            header = jwt.get_unverified_header(token)
        except jwt.InvalidTokenError:
            raise TokenRefused("the token is not valid") from None
        kid = header.get("kid")
        key = self._keys.get(kid) if isinstance(kid, str) else None
        if key is None or now - self._fetched_at > MAX_AGE_SECONDS:
            await self._refresh(now)
            key = self._keys.get(kid) if isinstance(kid, str) else None
        if key is None and self._unreachable:
            raise TokenRefused("the token cannot be verified now: the issuer's keys could not be fetched")
        if key is None:
            raise TokenRefused("the token is not signed by a key of this agent's issuer")
        return user_of(self._claims(token, key), self.user_claim, self.groups_claim)

    def _claims(self, token: str, key: jwt.PyJWK) -> dict:
        try:
            return jwt.decode(token, key.key, algorithms=ALGORITHMS, audience=self.audience or None,
                              issuer=self.issuer or None, leeway=self.leeway,
                              options={"verify_aud": bool(self.audience), "require": ["exp"]})
        except jwt.ExpiredSignatureError:
            raise TokenRefused("the token has expired") from None
        except jwt.InvalidAudienceError:
            raise TokenRefused("the token is not for this agent (its audience is not the agent's)") from None
        except jwt.InvalidIssuerError:
            raise TokenRefused("the token's issuer is not this agent's") from None
        except jwt.InvalidTokenError:
            raise TokenRefused("the token is not valid") from None

    async def _refresh(self, now: float) -> None:
        """Fetch the key set, unless it was fetched within REFRESH_INTERVAL_SECONDS (concurrent
        callers wait for one fetch)."""
        async with self._lock:
            if now - self._fetched_at < REFRESH_INTERVAL_SECONDS:
                return
            self._fetched_at = now
            try:
                async with httpx.AsyncClient(timeout=5.0, follow_redirects=False) as client:
                    url = self.jwks_url or (await self._discover(client))
                    keys = jwt.PyJWKSet.from_dict(await _document(client, url)).keys
            except (httpx.HTTPError, ValueError, jwt.PyJWKSetError) as error:
                log.warning("cannot fetch the OIDC issuer's keys: %s", error)
                self._unreachable = True
                return
            self._unreachable = False
            self._keys = {key.key_id: key for key in keys if key.key_id and key.public_key_use in (None, "sig")}

    async def _discover(self, client: httpx.AsyncClient) -> str:
        document = await _document(client, self.issuer.rstrip("/") + "/.well-known/openid-configuration")
        url = document.get("jwks_uri")
        if not isinstance(url, str) or not url.startswith(("https://", "http://")):
            raise ValueError("the issuer's discovery document names no jwks_uri")
        return url


async def _document(client: httpx.AsyncClient, url: str) -> dict:
    response = await client.get(url, headers={"Accept": "application/json"})
    response.raise_for_status()
    if len(response.content) > MAX_DOCUMENT_BYTES:
        raise ValueError(f"{url} answered more than {MAX_DOCUMENT_BYTES} bytes")
    document = response.json()
    if not isinstance(document, dict):
        raise ValueError(f"{url} did not answer a JSON object")
    return document

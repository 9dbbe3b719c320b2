"""`kaos login` and `kaos logout`: sign the CLI in against an OpenID Connect issuer (docs/cli.md,
"Signing in"), and the bearer token the other commands send when not given one (``bearer``).

The flow is the authorization code with PKCE (S256) and a loopback redirect (RFC 8252): the CLI
listens on 127.0.0.1, prints the issuer's sign-in URL and opens a browser on it (``--no-browser``:
only prints), the issuer sends the browser back to ``http://127.0.0.1:<port>/callback`` with a
code, and the CLI exchanges it, with the PKCE verifier, for tokens. The ID token, when there is
one, is verified with PyJWT against the issuer's JWKS (issuer, audience = the client id, nonce)
to say who signed in. No device flow: the tests' issuer (Ory Hydra v2.3.0) serves none.

The tokens go to the credentials file (cli/credentials.py, mode 0600); an access token that
expired is refreshed with the refresh token (scope ``offline_access``) when there is one, and
otherwise the command says to run `kaos login` again.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import sys
import time
import webbrowser
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlencode

import httpx
import jwt

from kaos.cli import credentials
from kaos.cli.client import ControlPlaneError
from kaos.cli.credentials import Login
from kaos.cli.loopback import Loopback

DEFAULT_CLIENT_ID = "kaos-cli"
DEFAULT_SCOPE = "openid offline_access"
TIMEOUT = 30.0  # seconds for one request to the issuer


class LoginError(ControlPlaneError):
    """A sign-in, refresh or logout that did not happen; the message says why, for the user."""


def pkce_pair() -> tuple[str, str]:
    """A code verifier and its S256 challenge (RFC 7636)."""
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def authorization_url(metadata: dict, login: Login, redirect_uri: str, state: str, nonce: str, challenge: str) -> str:
    params = {"response_type": "code", "client_id": login.client_id, "redirect_uri": redirect_uri,
              "scope": login.scope, "state": state, "nonce": nonce, "code_challenge": challenge,
              "code_challenge_method": "S256", **({"audience": login.audience} if login.audience else {})}
    return metadata["authorization_endpoint"] + "?" + urlencode(params)


def callback_problem(query: dict, state: str) -> str | None:
    """What is wrong with the query the browser came back with, for the page and the error; None: a code."""
    if "error" in query:
        described = f": {query['error_description']}" if query.get("error_description") else ""
        return f"the issuer did not sign you in ({query['error']}{described}); login denied or cancelled"
    if not secrets.compare_digest(query.get("state", ""), state):
        return ("the callback's state does not match this login's (a stale tab or another login's redirect); "
                "run `kaos login` again")
    if not query.get("code"):
        return "the callback carries no authorization code"
    return None


def discover(http: httpx.Client, issuer: str) -> dict:
    """The issuer's OpenID Connect metadata; a clear error when it cannot be had."""
    url = issuer.rstrip("/") + "/.well-known/openid-configuration"
    try:
        response = http.get(url)
    except httpx.HTTPError as error:
        raise LoginError(f"the issuer {issuer} cannot be reached ({error.__class__.__name__}: {error}); "
                         "check --issuer") from None
    try:
        metadata = response.json() if response.status_code == 200 else None
    except ValueError:
        metadata = None
    if not isinstance(metadata, dict) or not metadata.get("authorization_endpoint") or not metadata.get("token_endpoint"):
        raise LoginError(f"{issuer} is not an OpenID Connect issuer: GET {url} answered HTTP {response.status_code} "
                         "without the authorization and token endpoints")
    if metadata.get("issuer", "").rstrip("/") != issuer.rstrip("/"):
        raise LoginError(f"{url} names the issuer {metadata.get('issuer')!r}, not {issuer!r}: pass that as --issuer")
    return metadata


def _tokens(http: httpx.Client, metadata: dict, form: dict, what: str) -> dict:
    try:
        response = http.post(metadata["token_endpoint"], data=form)
    except httpx.HTTPError as error:
        raise LoginError(f"the issuer's token endpoint cannot be reached for {what}: {error}") from None
    try:
        answer = response.json()
    except ValueError:
        answer = {"error": response.text[:200]}
    if response.status_code != 200 or not answer.get("access_token"):
        detail = answer.get("error_description") or answer.get("error") or f"HTTP {response.status_code}"
        raise LoginError(f"the issuer refused {what}: {detail}")
    return answer


def _kept(login: Login, answer: dict, now: float, subject: str) -> Login:
    lifetime = answer.get("expires_in")
    return replace(login, access_token=answer["access_token"],
                   refresh_token=answer.get("refresh_token") or login.refresh_token,
                   expires_at=now + float(lifetime) if isinstance(lifetime, (int, float)) else 0.0,
                   subject=subject or login.subject)


def signing_algorithms(metadata: dict) -> list[str]:
    """The issuer's ID token algorithms with a public key: never ``none`` nor a shared secret (HS*)."""
    listed = metadata.get("id_token_signing_alg_values_supported") or ["RS256"]
    return [name for name in listed if name != "none" and not name.startswith("HS")] or ["RS256"]


def verified_subject(metadata: dict, login: Login, id_token: str, nonce: str) -> str:
    """The ``sub`` of the ID token, its signature (the issuer's JWKS), issuer, audience and nonce checked."""
    try:
        key = jwt.PyJWKClient(metadata["jwks_uri"], timeout=int(TIMEOUT)).get_signing_key_from_jwt(id_token)
        claims = jwt.decode(id_token, key.key, audience=login.client_id, issuer=metadata["issuer"],
                            algorithms=signing_algorithms(metadata))
    except (jwt.PyJWTError, KeyError) as error:
        raise LoginError(f"the issuer's ID token does not verify: {error}") from None
    if claims.get("nonce") != nonce:
        raise LoginError("the issuer's ID token carries another login's nonce; run `kaos login` again")
    return str(claims.get("sub") or "")


def sign_in(login: Login, port: int, open_browser: bool, timeout: float, out=sys.stdout) -> Login:
    """The authorization-code flow with PKCE on a loopback redirect; the login with its tokens."""
    with httpx.Client(timeout=TIMEOUT) as http:
        metadata = discover(http, login.issuer)
        if "S256" not in metadata.get("code_challenge_methods_supported", ["S256"]):
            raise LoginError(f"the issuer {login.issuer} does not support PKCE with S256")
        try:
            loopback = Loopback(port)
        except OSError as error:
            raise LoginError(f"cannot listen on 127.0.0.1:{port} for the issuer's redirect: {error}") from None
        try:
            verifier, challenge = pkce_pair()
            state, nonce = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
            url = authorization_url(metadata, login, loopback.redirect_uri, state, nonce, challenge)
            print(f"Open this URL in a browser to sign in to {login.issuer}:\n\n  {url}\n", file=out, flush=True)
            if open_browser and not _open(url):
                print("(no browser could be opened: open the URL yourself)", file=out, flush=True)
            print(f"Waiting for the sign-in to come back to {loopback.redirect_uri} ...", file=out, flush=True)
            try:
                query = loopback.wait(lambda q: callback_problem(q, state), timeout)
            except KeyboardInterrupt:
                raise LoginError("login cancelled (Ctrl-C); no token kept") from None
            if query is None:
                raise LoginError(f"no sign-in came back within {timeout:.0f} s; login cancelled, no token kept")
            problem = callback_problem(query, state)
            if problem:
                raise LoginError(problem)
            now = time.time()
            answer = _tokens(http, metadata, {
                "grant_type": "authorization_code", "code": query["code"], "redirect_uri": loopback.redirect_uri,
                "client_id": login.client_id, "code_verifier": verifier}, "the authorization code")
        finally:
            loopback.close()
    subject = verified_subject(metadata, login, answer["id_token"], nonce) if answer.get("id_token") else ""
    return _kept(login, answer, now, subject)


def _open(url: str) -> bool:
    try:
        return webbrowser.open(url)
    except webbrowser.Error:
        return False


def refreshed(login: Login) -> Login:
    """The login with a new access token from its refresh token (the issuer may rotate that too)."""
    with httpx.Client(timeout=TIMEOUT) as http:
        metadata = discover(http, login.issuer)
        now = time.time()
        answer = _tokens(http, metadata, {"grant_type": "refresh_token", "refresh_token": login.refresh_token,
                                          "client_id": login.client_id}, "the refresh of the sign-in")
    return _kept(login, answer, now, "")


def bearer(home: Path, path: Path | None = None, now: float | None = None) -> str | None:
    """The access token of `kaos login` for the context of ``home`` (refreshed and kept when it
    expired), or None when the CLI is not signed in there."""
    path = path or credentials.credentials_path()
    context = credentials.context_of(home)
    login = credentials.load(path, context)
    if login is None or not login.access_token:
        return None
    if not login.expired(time.time() if now is None else now):
        return login.access_token
    if not login.refresh_token:
        raise LoginError(f"the sign-in to {login.issuer} has expired and has no refresh token: run `kaos login`")
    try:
        login = refreshed(login)
    except LoginError as error:
        raise LoginError(f"the sign-in to {login.issuer} has expired and could not be refreshed ({error}): "
                         "run `kaos login`") from None
    credentials.save(path, context, login)
    return login.access_token


def run_login(args, home: Path) -> int:
    path, context = credentials.credentials_path(), credentials.context_of(home)
    before = credentials.load(path, context)
    issuer = args.issuer or (before.issuer if before else "")
    if not issuer:
        raise LoginError("kaos login needs --issuer (the OpenID Connect issuer URL) the first time in a context")
    if not issuer.startswith(("https://", "http://")):
        raise LoginError(f"--issuer {issuer!r} is not an http(s) URL")
    same = before is not None and before.issuer == issuer
    login = Login(issuer=issuer,
                  client_id=args.client_id or (before.client_id if same else DEFAULT_CLIENT_ID),
                  scope=args.scope or (before.scope if same else DEFAULT_SCOPE),
                  audience=args.audience if args.audience is not None else (before.audience if same else ""))
    signed = sign_in(login, args.port, not args.no_browser, args.timeout)
    credentials.save(path, context, signed)
    who = f" as {signed.subject}" if signed.subject else ""
    refresh = "; refreshed when it expires" if signed.refresh_token else "; no refresh token (scope offline_access)"
    print(f"signed in to {signed.issuer}{who}; token kept in {path}{refresh}")
    return 0


def run_logout(home: Path) -> int:
    path = credentials.credentials_path()
    removed = credentials.remove(path, credentials.context_of(home))
    print(f"signed out: token removed from {path}" if removed else "not signed in")
    return 0


def add_parsers(commands, login_command, logout_command) -> None:
    login = commands.add_parser("login", help="sign the CLI in against an OpenID Connect issuer (a browser on "
                                              "loopback); chat, approvals, memory and audit then send the token",
                                description=__doc__.split("\n\n")[1])
    login.add_argument("--issuer", help="the issuer URL (remembered for this context: KAOS_HOME)")
    login.add_argument("--client-id", help=f"the OAuth client, a public one with the redirect "
                                           f"http://127.0.0.1/callback (default {DEFAULT_CLIENT_ID})")
    login.add_argument("--scope", help=f"the scopes asked for (default {DEFAULT_SCOPE!r})")
    login.add_argument("--audience", help="the audience the agents' spec.auth.oidc expects, for issuers that "
                                          "take an audience parameter (Hydra, Auth0)")
    login.add_argument("--port", type=int, default=0, help="the loopback port of the redirect (default: any free)")
    login.add_argument("--no-browser", action="store_true", help="only print the URL to open")
    login.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for the sign-in (default 300)")
    login.set_defaults(run=login_command)
    logout = commands.add_parser("logout", help="remove the token of `kaos login` for this context")
    logout.set_defaults(run=logout_command)

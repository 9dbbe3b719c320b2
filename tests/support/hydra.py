"""A real OpenID Connect issuer for the tests: Ory Hydra (scripts/setup-identity builds it from
the Go module proxy into ~/.cache/kaos/hydra-<version>/), run as a process on 127.0.0.1 with an
in-memory database, access tokens as JWTs and the ``groups`` claim at the top level.

Hydra has no users of its own: a login and consent app says who signed in and what the tokens
carry. Here that app is ``Hydra.token``, which walks the authorization-code flow over HTTP as a
browser would and accepts the login and consent through Hydra's admin API for one of the static
``USERS``, with that user's groups in the access token.

``Issuer`` is that app against any Hydra: in the real-cluster tier, the pod of cluster/hydra.yaml,
whose issuer URL (the tokens' ``iss``) is its cluster DNS name and which this machine reaches
through ``kubectl port-forward``; a browser there reaches it, and ``LoginApp``, under the names
the pod's configuration gives them, by Chromium's host-resolver rules.
"""

from __future__ import annotations

import html
import json
import os
import secrets
import shutil
import subprocess
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from kaos.local.ports import free_port
from tests.support.processes import stop_process, wait_serving

ROOT = Path(__file__).resolve().parents[2]
USERS = {"alice": ["engineering", "approvers"], "bob": ["engineering"], "carol": ["sales"]}
CALLBACK = "http://127.0.0.1:9/callback"  # never fetched: the code is read from the redirect
LOOPBACK_CALLBACK = "http://127.0.0.1/callback"  # a CLI's (kaos login): Hydra allows any port on loopback
# cluster/hydra.yaml: the real-cluster tier's Hydra, its Service's namespace, name and ports.
CLUSTER_NAMESPACE, CLUSTER_SERVICE, CLUSTER_PUBLIC_PORT, CLUSTER_ADMIN_PORT = "kaos-identity", "hydra", 4444, 4445
SIGNING_KEY_SETS = ("hydra.openid.id-token", "hydra.jwt.access-token")
TIMEOUT = 60  # seconds for one request to Hydra (a loaded test machine)
CONFIG = """\
dsn: memory
serve:
  public: {{host: 127.0.0.1, port: {public}}}
  admin: {{host: 127.0.0.1, port: {admin}}}
urls:
  self: {{issuer: "http://127.0.0.1:{public}"}}
  login: "{login_app}/login"
  consent: "{login_app}/consent"
  logout: "{login_app}/logout"
strategies:
  access_token: jwt
oauth2:
  pkce: {{enforced_for_public_clients: true}}  # a browser's client (the console) must send a code challenge
  allowed_top_level_claims: [groups]
  mirror_top_level_claims: false
  hashers: {{algorithm: pbkdf2, pbkdf2: {{iterations: 1000}}}}  # the tests' client secrets: cheap to check
secrets:
  system: ["{secret}"]
log: {{level: warn}}
"""


def hydra_binary() -> str | None:
    """The binary scripts/setup-identity linked into .tools/bin (or one on PATH)."""
    linked = ROOT / ".tools" / "bin" / "hydra"
    return str(linked) if linked.exists() else shutil.which("hydra")


@dataclass
class Client:
    id: str
    secret: str


class Issuer:
    """A running Hydra: ``issuer``, the URL its tokens name (``iss``); ``public_url``, where this
    machine reaches its public API (the issuer itself, or a port-forward to it); ``admin_url``,
    its admin API. ``client`` registers an OAuth client, ``token`` signs a user in."""

    def __init__(self, issuer: str, admin_url: str, public_url: str = "") -> None:
        self.issuer, self.admin_url, self.public_url = issuer, admin_url, public_url or issuer

    def provision_signing_keys(self) -> None:
        for key_set in SIGNING_KEY_SETS:
            self.provision(key_set)

    def provision(self, key_set: str) -> None:
        """A 2048-bit RSA signing key for ``key_set`` (what company issuers use), rather than the
        4096-bit one Hydra would generate on the first token (seconds of CPU on a loaded machine)."""
        private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        jwk = {**json.loads(RSAAlgorithm.to_jwk(private)), "kid": f"{key_set}-{secrets.token_hex(4)}",
               "alg": "RS256", "use": "sig"}
        answer = httpx.put(f"{self.admin_url}/keys/{key_set}", json={"keys": [jwk]}, timeout=TIMEOUT)
        assert answer.status_code == 200, answer.text

    def _here(self, url: str) -> str:
        """A URL of the issuer as this machine reaches it."""
        return self.public_url + url[len(self.issuer):] if url.startswith(self.issuer) else url

    def client(self, audiences: list[str], token_lifespan: str = "") -> Client:
        """An authorization-code client allowed to ask for tokens for ``audiences``; with
        ``token_lifespan`` (``1s``), its access tokens expire that soon."""
        client = Client("kaos-" + secrets.token_hex(4), secrets.token_hex(16))
        created = httpx.post(self.admin_url + "/clients", json={
            "client_id": client.id, "client_secret": client.secret, "grant_types": ["authorization_code"],
            "response_types": ["code"], "redirect_uris": [CALLBACK], "scope": "openid",
            "audience": audiences, "token_endpoint_auth_method": "client_secret_post"}, timeout=TIMEOUT)
        assert created.status_code == 201, created.text
        if token_lifespan:
            changed = httpx.put(f"{self.admin_url}/clients/{client.id}/lifespans",
                                json={"authorization_code_grant_access_token_lifespan": token_lifespan}, timeout=TIMEOUT)
            assert changed.status_code == 200, changed.text
        return client

    def public_client(self, redirect_uri: str, audiences: list[str], client_id: str = "") -> str:
        """A browser's client (no secret, PKCE enforced): the authorization-code flow back to
        ``redirect_uri`` (also where a sign-out at the issuer returns), scopes openid and profile,
        access tokens for ``audiences``; its id (``client_id``, replacing a client of that id, or a
        new one)."""
        if client_id:
            gone = httpx.delete(f"{self.admin_url}/clients/{client_id}", timeout=TIMEOUT)
            assert gone.status_code in (204, 404), gone.text
        client_id = client_id or "kaos-browser-" + secrets.token_hex(4)
        created = httpx.post(self.admin_url + "/clients", json={
            "client_id": client_id, "grant_types": ["authorization_code"], "response_types": ["code"],
            "redirect_uris": [redirect_uri], "post_logout_redirect_uris": [redirect_uri], "scope": "openid profile",
            "audience": audiences, "token_endpoint_auth_method": "none"}, timeout=TIMEOUT)
        assert created.status_code == 201, created.text
        return client_id

    def allow_redirect(self, client_id: str, redirect_uri: str) -> None:
        """Send ``client_id``'s sign-ins and sign-outs back to ``redirect_uri`` (known once its
        server listens)."""
        changed = httpx.patch(f"{self.admin_url}/clients/{client_id}", timeout=TIMEOUT, json=[
            {"op": "replace", "path": path, "value": [redirect_uri]} for path in ("/redirect_uris", "/post_logout_redirect_uris")])
        assert changed.status_code == 200, changed.text

    def code(self, client_id: str, redirect_uri: str, user: str, params: dict[str, str]) -> str:
        """An authorization code for ``user`` (one of USERS) as a browser's client gets it back,
        for an authorization request with ``params`` (state, nonce, code_challenge, audience...);
        the ID token carries the user's name and groups."""
        with httpx.Client(timeout=TIMEOUT) as browser:
            started = browser.get(self.public_url + "/oauth2/auth", params={
                "client_id": client_id, "response_type": "code", "redirect_uri": redirect_uri,
                "scope": "openid profile", **params})
            login = self._accept(started, "login", {"subject": user, "remember": False})
            groups = USERS[user]
            consent = self._accept(browser.get(self._here(login)), "consent", {
                "grant_scope": ["openid", "profile"], "grant_access_token_audience": [params.get("audience", "")],
                "session": {"access_token": {"groups": groups}, "id_token": {"groups": groups, "name": user}}})
            done = browser.get(self._here(consent))
            assert done.status_code in (302, 303), done.text
            return parse_qs(urlsplit(done.headers["location"]).query)["code"][0]

    def token(self, client: Client, user: str, audience: str) -> str:
        """An access token for ``user`` (one of USERS, with its groups) and ``audience``: the
        authorization-code flow, the login and consent accepted as the login app would."""
        with httpx.Client(timeout=TIMEOUT) as browser:
            state = secrets.token_hex(8)
            started = browser.get(self.public_url + "/oauth2/auth", params={
                "client_id": client.id, "response_type": "code", "redirect_uri": CALLBACK, "scope": "openid",
                "state": state, "audience": audience})
            login = self._accept(started, "login", {"subject": user, "remember": False})
            consent = self._accept(browser.get(self._here(login)), "consent", {
                "grant_scope": ["openid"], "grant_access_token_audience": [audience],
                "session": {"access_token": {"groups": USERS[user]}}})
            done = browser.get(self._here(consent))
            assert done.status_code in (302, 303), done.text
            query = parse_qs(urlsplit(done.headers["location"]).query)
            assert query.get("state") == [state], done.headers["location"]
            answer = browser.post(self.public_url + "/oauth2/token", data={
                "grant_type": "authorization_code", "code": query["code"][0], "redirect_uri": CALLBACK,
                "client_id": client.id, "client_secret": client.secret})
            assert answer.status_code == 200, answer.text
            return answer.json()["access_token"]

    def cli_client(self, audiences: list[str]) -> str:
        """A public client (no secret, PKCE) with the loopback redirect of a CLI (RFC 8252: any
        port of http://127.0.0.1/callback) and refresh tokens; its id."""
        client_id = "kaos-cli-" + secrets.token_hex(4)
        created = httpx.post(self.admin_url + "/clients", json={
            "client_id": client_id, "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"], "redirect_uris": [LOOPBACK_CALLBACK], "scope": "openid offline_access",
            "audience": audiences, "token_endpoint_auth_method": "none"}, timeout=TIMEOUT)
        assert created.status_code == 201, created.text
        return client_id

    def sign_in(self, url: str, user: str | None) -> httpx.Response:
        """Play the browser and the login app on an authorization ``url`` a client printed: sign
        ``user`` in (with its groups; every scope and audience asked for granted), or with None
        refuse the login; then follow the redirect to the client's callback and return its answer."""
        with httpx.Client(timeout=TIMEOUT) as browser:
            started = browser.get(url)
            if user is None:
                challenge = parse_qs(urlsplit(started.headers["location"]).query)["login_challenge"][0]
                back = httpx.put(f"{self.admin_url}/oauth2/auth/requests/login/reject",
                                 params={"login_challenge": challenge}, timeout=TIMEOUT,
                                 json={"error": "access_denied", "error_description": "the user said no"}
                                 ).json()["redirect_to"]
            else:
                login = self._accept(started, "login", {"subject": user, "remember": False})
                consent = browser.get(login)
                challenge = parse_qs(urlsplit(consent.headers["location"]).query)["consent_challenge"][0]
                asked = httpx.get(f"{self.admin_url}/oauth2/auth/requests/consent",
                                  params={"consent_challenge": challenge}, timeout=TIMEOUT).json()
                back = self._accept(consent, "consent", {
                    "grant_scope": asked["requested_scope"],
                    "grant_access_token_audience": asked["requested_access_token_audience"],
                    "session": {"access_token": {"groups": USERS[user]}}})
            done = browser.get(back)
            assert done.status_code in (302, 303), done.text
            return browser.get(done.headers["location"])

    def _accept(self, redirect: httpx.Response, step: str, body: dict) -> str:
        """Accept the login or consent challenge a redirect carries; where Hydra goes on."""
        assert redirect.status_code in (302, 303), redirect.text
        challenge = parse_qs(urlsplit(redirect.headers["location"]).query)[f"{step}_challenge"][0]
        accepted = httpx.put(f"{self.admin_url}/oauth2/auth/requests/{step}/accept",
                             params={f"{step}_challenge": challenge}, json=body, timeout=TIMEOUT)
        assert accepted.status_code == 200, accepted.text
        return accepted.json()["redirect_to"]


class Hydra(Issuer):
    """One Hydra process on 127.0.0.1 (its login and consent app at ``login_app``)."""

    def __init__(self, binary: str, workdir: Path, login_app: str = "http://127.0.0.1:9") -> None:
        self.public, self.admin = free_port(), free_port()
        self.login_app: LoginApp | None = None
        config = workdir / f"hydra-{self.public}.yml"
        config.write_text(CONFIG.format(public=self.public, admin=self.admin, secret=secrets.token_hex(24),
                                        login_app=login_app))
        self.log_path = workdir / f"hydra-{self.public}.log"
        with open(self.log_path, "w") as log:
            self.process = subprocess.Popen([binary, "serve", "all", "--dev", "--config", str(config)],
                                            stdout=log, stderr=subprocess.STDOUT, env={**os.environ})
        super().__init__(f"http://127.0.0.1:{self.public}", f"http://127.0.0.1:{self.admin}/admin")
        wait_serving(self.process, lambda: httpx.get(self.issuer + "/health/ready", timeout=1).status_code == 200,
                     60, "hydra (/health/ready)", self.log_path.read_text)
        self.provision_signing_keys()

    def stop(self) -> None:
        stop_process(self.process)


class LoginApp:
    """Hydra's login, consent and logout app for a real browser, on 127.0.0.1 in a thread:
    ``/login`` asks for a user name in a plain form (one of ``users``; "Remember me" keeps the
    session at Hydra) and accepts the login challenge as that user, or accepts it at once when
    Hydra remembers who it is (``skip``); ``/consent`` grants what the client asked for, with the
    user's groups in the access token and the ID token (and the name in the ID token);
    ``/logout`` accepts the logout challenge of a client's RP-initiated logout."""

    def __init__(self, users: dict[str, list[str]]) -> None:
        self.users = users
        self.admin_url = ""  # set once Hydra listens
        app = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                url = urlsplit(self.path)
                query = {name: values[0] for name, values in parse_qs(url.query).items()}
                if url.path == "/login":
                    challenge = query.get("login_challenge", "")
                    remembered = app.remembered(challenge)
                    if remembered:
                        self._redirect(app.accept("login", challenge, {"subject": remembered}))
                    else:
                        self._page(200, LOGIN_FORM.format(challenge=html.escape(challenge, quote=True)))
                elif url.path == "/logout":
                    self._redirect(app.accept("logout", query.get("logout_challenge", ""), {}))
                elif url.path == "/consent":
                    self._redirect(app.consent(query.get("consent_challenge", "")))
                else:
                    self._page(404, "<p>not found</p>")

            def do_POST(self) -> None:
                size = int(self.headers.get("content-length") or 0)
                form = {name: values[0] for name, values in parse_qs(self.rfile.read(size).decode()).items()}
                user = form.get("user", "").strip()
                if urlsplit(self.path).path != "/login" or user not in app.users:
                    self._page(400, f"<p>No user {html.escape(user)!s} here.</p>")
                    return
                self._redirect(app.accept("login", form.get("challenge", ""),
                                          {"subject": user, "remember": form.get("remember") == "on"}))

            def _page(self, status: int, body: str) -> None:
                data = f"<!doctype html><html><head><title>Test login</title></head><body>{body}</body></html>".encode()
                self.send_response(status)
                self.send_header("content-type", "text/html; charset=utf-8")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _redirect(self, location: str) -> None:
                self.send_response(303)
                self.send_header("location", location)
                self.send_header("content-length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def remembered(self, challenge: str) -> str:
        """The subject Hydra still has a session of for this login (it then skips the form), or ""."""
        asked = httpx.get(f"{self.admin_url}/oauth2/auth/requests/login", params={"login_challenge": challenge},
                          timeout=TIMEOUT)
        assert asked.status_code == 200, asked.text
        request = asked.json()
        return request["subject"] if request.get("skip") else ""

    def accept(self, step: str, challenge: str, body: dict) -> str:
        accepted = httpx.put(f"{self.admin_url}/oauth2/auth/requests/{step}/accept",
                             params={f"{step}_challenge": challenge}, json=body, timeout=TIMEOUT)
        assert accepted.status_code == 200, accepted.text
        return accepted.json()["redirect_to"]

    def consent(self, challenge: str) -> str:
        asked = httpx.get(f"{self.admin_url}/oauth2/auth/requests/consent", params={"consent_challenge": challenge},
                          timeout=TIMEOUT)
        assert asked.status_code == 200, asked.text
        request = asked.json()
        user = request["subject"]
        groups = self.users[user]
        return self.accept("consent", challenge, {
            "grant_scope": request.get("requested_scope") or ["openid"],
            "grant_access_token_audience": request.get("requested_access_token_audience") or [],
            "session": {"access_token": {"groups": groups}, "id_token": {"groups": groups, "name": user}}})

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)


LOGIN_FORM = """<h1>Test issuer: sign in</h1>
<form method="post" action="/login">
  <input type="hidden" name="challenge" value="{challenge}">
  <label for="user">User name</label> <input id="user" name="user" autocomplete="off">
  <input type="checkbox" id="remember" name="remember"> <label for="remember">Remember me</label>
  <button type="submit">Log in</button>
</form>"""


@contextmanager
def running_hydra(directory: Path, browser_users: dict[str, list[str]] | None = None) -> Iterator[Hydra]:
    """An issuer for a test module; the test fails (not skips) when Hydra was not built. With
    ``browser_users`` (name -> groups), a real browser signs in through ``LoginApp`` (its URL:
    the issuer's ``login_app``)."""
    binary = hydra_binary()
    if binary is None:
        pytest.fail("Ory Hydra is missing: run scripts/setup-identity (scripts/setup-test runs it)")
    login = LoginApp(browser_users) if browser_users is not None else None
    try:
        issuer = Hydra(binary, directory, login.url if login else "http://127.0.0.1:9")
        issuer.login_app = login
        if login:
            login.admin_url = issuer.admin_url
        try:
            yield issuer
        finally:
            issuer.stop()
    finally:
        if login:
            login.stop()

"""The console's side of sign-in (kaos.console.signin) over HTTP against a real issuer (Ory Hydra,
tests/support/hydra.py): the page's settings, and the code exchange as a public client with PKCE,
whose ID token is checked with PyJWT; a wrong nonce, a wrong verifier or a malformed request is a
400 that says why, never a 500."""

from __future__ import annotations

import base64
import hashlib
import secrets
import time

import httpx
import jwt
import pytest

from kaos.console import Console, LocalCatalog
from kaos.console.signin import SignIn, SignInConfig, end_session_endpoint
from tests.console.conftest import console_served
from tests.support.hydra import running_hydra

AUDIENCE = "kaos-signin-test"
REDIRECT = "http://127.0.0.1:9/"  # never fetched: the code is read from Hydra's redirect
pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def issuer(tmp_path_factory):
    with running_hydra(tmp_path_factory.mktemp("hydra")) as hydra:
        yield hydra, hydra.public_client(REDIRECT, [AUDIENCE])


@pytest.fixture(scope="module")
def console(issuer):
    hydra, client_id = issuer
    signin = SignIn(SignInConfig.of(hydra.issuer, client_id, AUDIENCE))
    with console_served(Console(LocalCatalog(lambda: []), signin=signin)) as url:
        yield url


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def attempt(issuer, user: str = "alice") -> dict[str, str]:
    """What the page holds after the issuer sent ``user`` back: the code, its verifier, the nonce."""
    hydra, client_id = issuer
    verifier, challenge = pkce()
    nonce = secrets.token_urlsafe(16)
    code = hydra.code(client_id, REDIRECT, user, {"state": secrets.token_urlsafe(16), "nonce": nonce,
                                                   "code_challenge": challenge, "code_challenge_method": "S256",
                                                   "audience": AUDIENCE})
    return {"code": code, "code_verifier": verifier, "redirect_uri": REDIRECT, "nonce": nonce}


def exchange(console: str, body) -> httpx.Response:
    return httpx.post(f"{console}/_console/api/signin/token", json=body, timeout=30)


def test_the_page_learns_where_to_send_people(console, issuer):
    hydra, client_id = issuer
    settings = httpx.get(f"{console}/_console/api/signin", timeout=30).json()
    assert settings == {"enabled": True, "issuer": hydra.issuer, "client_id": client_id,
                        "authorization_endpoint": hydra.issuer + "/oauth2/auth", "scope": "openid profile",
                        "audience": AUDIENCE, "end_session_endpoint": hydra.issuer + "/oauth2/sessions/logout"}


def test_only_an_http_end_session_endpoint_is_offered_to_the_page():
    """The page goes wherever it says on Sign out: a javascript: or relative URL is not offered."""
    assert end_session_endpoint({"end_session_endpoint": "https://id.example/logout"}) == "https://id.example/logout"
    for bad in ("javascript:alert(1)", "/logout", 42, None):
        assert end_session_endpoint({"end_session_endpoint": bad}) == ""
    assert end_session_endpoint({}) == ""


def test_a_code_and_its_verifier_become_the_persons_tokens(console, issuer):
    answer = exchange(console, attempt(issuer, "alice"))
    assert answer.status_code == 200, answer.text
    signed_in = answer.json()
    assert signed_in["user"] == {"subject": "alice", "name": "alice", "groups": ["approvers", "engineering"]}
    claims = jwt.decode(signed_in["access_token"], options={"verify_signature": False})
    assert claims["aud"] == [AUDIENCE] and claims["groups"] == ["engineering", "approvers"]
    assert answer.headers["cache-control"] == "no-store"


def test_a_wrong_nonce_or_verifier_is_refused_in_words(console, issuer):
    replayed = exchange(console, {**attempt(issuer), "nonce": "another-sign-in"})
    assert replayed.status_code == 400
    assert "does not carry this sign-in's nonce" in replayed.json()["error"]
    guessed = exchange(console, {**attempt(issuer), "code_verifier": secrets.token_urlsafe(48)})
    assert guessed.status_code == 400
    assert guessed.json()["error"].startswith("The sign-in could not be completed: the issuer refused the sign-in")


@pytest.mark.parametrize(("body", "words"), [
    ({"code": "c", "redirect_uri": REDIRECT, "nonce": "n"}, "no 'code_verifier'"),
    ({"code": "c", "code_verifier": "short", "redirect_uri": REDIRECT, "nonce": "n"}, "43 to 128 characters"),
    (["not", "an", "object"], "a JSON object"),
])
def test_a_malformed_exchange_is_a_400_naming_the_problem(console, body, words):
    answer = exchange(console, body)
    assert answer.status_code == 400 and words in answer.json()["error"], answer.text


def test_a_console_without_an_issuer_signs_no_one_in():
    with console_served(Console(LocalCatalog(lambda: []))) as url:
        assert httpx.get(f"{url}/_console/api/signin", timeout=30).json() == {"enabled": False}
        refused = exchange(url, {})
        assert refused.status_code == 404 and "no OIDC issuer" in refused.json()["error"]


def test_an_id_token_of_another_key_client_or_sign_in_is_refused():
    """verify_id_token (PyJWT): the signature, the audience (this client) and the nonce."""
    from cryptography.hazmat.primitives.asymmetric import rsa

    from kaos.console.signin import SignInError, verify_id_token

    config = SignInConfig.of("http://issuer.test", "kaos-console")
    key, other = (rsa.generate_private_key(public_exponent=65537, key_size=2048) for _ in range(2))

    def token(signer=key, **claims) -> str:
        now = int(time.time())
        body = {"iss": "http://issuer.test", "aud": "kaos-console", "sub": "alice", "iat": now, "exp": now + 60,
                "nonce": "n1", **claims}
        return jwt.encode(body, signer, algorithm="RS256")

    assert verify_id_token(token(), key.public_key(), config, "n1")["sub"] == "alice"
    for forged, words in ((token(signer=other), "Signature verification failed"),
                          (token(aud="another-app"), "Audience doesn't match"),
                          (token(exp=int(time.time()) - 120), "Signature has expired"),
                          (token(azp="another-app"), "issued to 'another-app'")):
        with pytest.raises(SignInError, match=words):
            verify_id_token(forged, key.public_key(), config, "n1")
    with pytest.raises(SignInError, match="nonce") as refused:
        verify_id_token(token(), key.public_key(), config, "n2")
    assert refused.value.status == 400


def test_half_a_sign_in_configuration_is_refused_by_name():
    from kaos.console.__main__ import main
    from kaos.settings import Settings, SettingsError

    with pytest.raises(SettingsError, match="needs both KAOS_CONSOLE_OIDC_ISSUER and KAOS_CONSOLE_OIDC_CLIENT_ID"):
        Settings.from_env({"KAOS_CONSOLE_OIDC_ISSUER": "https://id.example.com"})
    with pytest.raises(SettingsError, match="not an http"):
        Settings.from_env({"KAOS_CONSOLE_OIDC_ISSUER": "id.example.com", "KAOS_CONSOLE_OIDC_CLIENT_ID": "c"})
    with pytest.raises(SystemExit) as exited:
        main(["--oidc-client-id", "kaos-console"])
    assert exited.value.code == 2

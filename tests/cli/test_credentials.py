"""The credentials file of `kaos login` (kaos.cli.credentials): 0600 from its creation whatever the
umask, 0600 again when it replaces a wider file, one entry per context, gone with the last one;
and the parts of the flow that are pure (PKCE, the callback's checks)."""

from __future__ import annotations

import base64
import hashlib
import os
import stat

import pytest

from kaos.cli import credentials
from kaos.cli.credentials import CredentialsError, Login
from kaos.cli.login import callback_problem, pkce_pair, signing_algorithms

LOGIN = Login(issuer="http://127.0.0.1:1", client_id="kaos-cli", scope="openid", access_token="t", expires_at=100.0)


def mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_file_is_0600_from_its_creation_whatever_the_umask(tmp_path):
    path = tmp_path / "config" / "kaos" / "credentials.json"
    old = os.umask(0)
    try:
        credentials.save(path, "/home/a", LOGIN)
    finally:
        os.umask(old)
    assert mode(path) == 0o600 and mode(path.parent) == 0o700
    path.chmod(0o644)  # widened by someone: the next write is a new 0600 file
    credentials.save(path, "/home/b", LOGIN)
    assert mode(path) == 0o600
    assert [p.name for p in path.parent.iterdir()] == ["credentials.json"]  # no temporary left behind


def test_one_entry_per_context_and_the_file_goes_with_the_last(tmp_path):
    path = tmp_path / "credentials.json"
    credentials.save(path, "/home/a", LOGIN)
    credentials.save(path, "/home/b", Login(issuer="http://other", client_id="c", scope="openid"))
    assert credentials.load(path, "/home/a") == LOGIN and credentials.load(path, "/home/b").issuer == "http://other"
    assert credentials.remove(path, "/home/a") and credentials.load(path, "/home/a") is None
    assert not credentials.remove(path, "/home/a")
    assert credentials.remove(path, "/home/b") and not path.exists()


def test_a_broken_file_is_a_clear_error(tmp_path):
    path = tmp_path / "credentials.json"
    path.write_text("{not json")
    with pytest.raises(CredentialsError, match="cannot be read .*remove it and run `kaos login`"):
        credentials.load(path, "/home/a")


def test_expiry_has_a_leeway_and_unknown_never_expires():
    assert not LOGIN.expired(now=60.0) and LOGIN.expired(now=71.0)
    assert not Login(issuer="i", client_id="c", scope="s").expired(now=1e12)


def test_the_path_follows_xdg_config_home():
    assert str(credentials.credentials_path({"XDG_CONFIG_HOME": "/x"})) == "/x/kaos/credentials.json"
    assert str(credentials.credentials_path({"HOME": "/h"})) == "/h/.config/kaos/credentials.json"


def test_pkce_challenge_is_s256_of_the_verifier():
    verifier, challenge = pkce_pair()
    assert 43 <= len(verifier) <= 128
    expected = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    assert challenge == expected and pkce_pair()[0] != verifier


@pytest.mark.parametrize("query, problem", [
    ({"code": "c", "state": "s"}, None),
    ({"code": "c", "state": "other"}, "state does not match"),
    ({"code": "c"}, "state does not match"),
    ({"state": "s"}, "no authorization code"),
    ({"error": "access_denied", "state": "s"}, "did not sign you in (access_denied); login denied or cancelled"),
])
def test_the_callback_is_checked(query, problem):
    found = callback_problem(query, "s")
    assert found is None if problem is None else problem in found


def test_the_id_token_is_checked_only_with_public_key_algorithms():
    assert signing_algorithms({"id_token_signing_alg_values_supported": ["RS256", "none", "HS256", "ES256"]}) == [
        "RS256", "ES256"]
    assert signing_algorithms({}) == signing_algorithms({"id_token_signing_alg_values_supported": ["none"]}) == [
        "RS256"]

"""Bearer authentication on real agent processes: API keys, OIDC JWTs against a JWKS served
on 127.0.0.1, probes exempt, 401 with WWW-Authenticate, delegation with the agent's own
credential, and no planted secret in any log, memory event or metric."""

from __future__ import annotations

import json
import secrets
import time

import httpx
import jwt
import openai
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.support.http_server import StaticServer

from .conftest import agent_env, chat, events
from .test_delegation import card_url, delegate_block

USER_KEY = f"kaos-user-{secrets.token_hex(12)}"
OTHER_KEY = f"kaos-other-{secrets.token_hex(12)}"
WORKER_KEY = f"kaos-worker-{secrets.token_hex(12)}"
ISSUER, AUDIENCE = "https://issuer.example", "kaos-agents"
PLANTED: list[str] = [USER_KEY, OTHER_KEY, WORKER_KEY]


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


class Issuer:
    """An OIDC issuer's signing key and its JWKS, served over HTTP on 127.0.0.1."""

    def __init__(self) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        jwks = json.dumps({"keys": [{**public, "kid": "k1", "use": "sig", "alg": "RS256"}]}).encode()
        self.server = StaticServer(jwks, "application/json")
        self.url = self.server.url + "/jwks.json"

    def token(self, key=None, **claims) -> str:
        body = {"iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "exp": int(time.time()) + 300, **claims}
        token = jwt.encode(body, key or self.key, algorithm="RS256", headers={"kid": "k1"})
        PLANTED.append(token)
        return token


@pytest.fixture(scope="module")
def issuer():
    issuer = Issuer()
    yield issuer
    issuer.server.stop()


@pytest.fixture(scope="module")
def worker(start, mock_model):
    return start("agent", "auth-worker", agent_env("auth-worker", mock_model, AUTH_API_KEYS=WORKER_KEY,
                                                   DEBUG_MOCK_RESPONSES=["worker done", "worker done"]))


@pytest.fixture(scope="module")
def guarded(start, mock_model, worker, issuer):
    port = int(worker.url.rsplit(":", 1)[1])
    return start("agent", "auth-coord", agent_env(
        "auth-coord", mock_model, AUTH_API_KEYS=f"{USER_KEY},{OTHER_KEY}", AUTH_OUTBOUND_TOKEN=WORKER_KEY,
        AUTH_OIDC_JWKS_URL=issuer.url, AUTH_OIDC_ISSUER=ISSUER, AUTH_OIDC_AUDIENCE=AUDIENCE,
        PEER_AGENTS="auth-worker", PEER_AGENT_AUTH_WORKER_CARD_URL=card_url(port),
    ))


def test_probes_metrics_and_card_need_no_token(guarded):
    for path in ("/health", "/ready", "/metrics", "/.well-known/agent", "/.well-known/agent.json"):
        assert httpx.get(guarded.url + path).status_code == 200, path


def test_missing_or_wrong_tokens_get_401_with_a_challenge(guarded):
    missing = chat(guarded, "hi")
    assert missing.status_code == 401
    assert missing.headers["WWW-Authenticate"] == 'Bearer realm="kaos"'
    assert "Bearer" in missing.json()["detail"]
    for headers in (bearer("not-a-key"), {"Authorization": f"Basic {USER_KEY}"}, bearer(USER_KEY + "x")):
        refused = chat(guarded, "hi", headers=headers)
        assert refused.status_code == 401
        assert refused.headers["WWW-Authenticate"].startswith('Bearer realm="kaos"')
    wrong = chat(guarded, "hi", headers=bearer("not-a-key"))
    assert 'error="invalid_token"' in wrong.headers["WWW-Authenticate"]
    assert httpx.get(guarded.url + "/memory/events").status_code == 401
    assert httpx.get(guarded.url + "/memory/sessions").status_code == 401


def test_api_keys_are_accepted_and_the_openai_client_works(guarded, mock_model):
    mock_model.reset()
    for key in (USER_KEY, OTHER_KEY):
        assert chat(guarded, "hello", headers=bearer(key)).status_code == 200
    client = openai.OpenAI(base_url=guarded.url + "/v1", api_key=USER_KEY, max_retries=0)
    answer = client.chat.completions.create(model="x", messages=[{"role": "user", "content": "via openai"}])
    assert answer.choices[0].message.content == "echo: via openai"
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=guarded.url + "/v1", api_key="wrong", max_retries=0).chat.completions.create(
            model="x", messages=[{"role": "user", "content": "no"}])


def test_oidc_jwts_are_checked_against_the_issuers_keys(guarded, issuer):
    assert chat(guarded, "jwt", headers=bearer(issuer.token())).status_code == 200
    expired = chat(guarded, "jwt", headers=bearer(issuer.token(exp=int(time.time()) - 120)))
    assert expired.status_code == 401 and "expired" in expired.headers["WWW-Authenticate"]
    assert chat(guarded, "jwt", headers=bearer(issuer.token(aud="someone-else"))).status_code == 401
    assert chat(guarded, "jwt", headers=bearer(issuer.token(iss="https://evil.example"))).status_code == 401
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    assert chat(guarded, "jwt", headers=bearer(issuer.token(key=stranger))).status_code == 401


def test_delegation_carries_the_agents_own_credential(guarded, worker, mock_model):
    assert chat(worker, "direct").status_code == 401  # the worker is guarded too
    mock_model.reset()
    mock_model.script(delegate_block("auth-worker", "Do it"), "The worker did it.")
    answer = chat(guarded, "delegate", headers={**bearer(USER_KEY), "X-Session-ID": "auth-chain"})
    assert answer.json()["choices"][0]["message"]["content"] == "The worker did it."
    got = httpx.get(guarded.url + "/memory/events", params={"session_id": "auth-chain"}, headers=bearer(USER_KEY))
    types = [event["event_type"] for event in got.json()["events"]]
    assert types == ["user_message", "delegation_request", "delegation_response", "agent_response"]


def test_a_delegation_without_credentials_is_refused_by_the_peer(start, mock_model, worker):
    port = int(worker.url.rsplit(":", 1)[1])
    open_agent = start("agent", "auth-nocred", agent_env(
        "auth-nocred", mock_model, PEER_AGENTS="auth-worker", PEER_AGENT_AUTH_WORKER_CARD_URL=card_url(port)))
    mock_model.reset()
    mock_model.script(delegate_block("auth-worker", "Do it"), "It failed.")
    assert chat(open_agent, "delegate", headers={"X-Session-ID": "nocred"}).status_code == 200
    failure = events(open_agent, session_id="nocred", event_type="delegation_error")["events"][0]
    assert "HTTP 401" in failure["content"]["error"]


def test_no_planted_secret_in_logs_memory_or_metrics(guarded, worker, log_dir):
    # Runs after the traffic above (module order): every key and token the tests used.
    import pathlib

    texts = [path.read_text(errors="replace") for path in pathlib.Path(log_dir).glob("*.log")]
    for agent, key in ((guarded, USER_KEY), (worker, WORKER_KEY)):
        texts.append(httpx.get(agent.url + "/memory/events", params={"limit": 1000}, headers=bearer(key)).text)
        texts.append(httpx.get(agent.url + "/metrics").text)
        texts.append(httpx.get(agent.url + "/.well-known/agent").text)
    assert len(PLANTED) > 3
    for text in texts:
        for secret in PLANTED:
            assert secret not in text

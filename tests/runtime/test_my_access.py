"""``GET /access/me`` (routes/access.py, grants.held): each caller learns what it may do on an
agent by the rules the agent enforces, against real agent processes and a real issuer (Ory
Hydra, tests/support/hydra.py): a user whose group may chat sees ``chat`` and may chat, one
without the grant sees none and is refused, an admin sees every verb, an API key its own grant;
no token is a 401 as on every other route; an agent without authentication lets everyone do
everything."""

from __future__ import annotations

import httpx
import pytest

from .conftest import agent_env, chat

AUDIENCE = "access-me-agent"
KEY = "access-me-key-1"
RULES = ('[{"verbs": ["chat"], "groups": ["engineering"]}, {"verbs": ["approve"], "users": ["bob"]},'
         ' {"verbs": ["read"], "principals": ["key:1"]}]')


def my_access(agent, token: str | None = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.get(agent.url + "/access/me", headers=headers, timeout=10)


@pytest.fixture(scope="module")
def guarded(start, mock_model, hydra):
    return start("agent", "access-me", agent_env(
        "access-me", mock_model, DEBUG_MOCK_RESPONSES=["hello"] * 4, AUTH_API_KEYS=KEY,
        AUTH_OIDC_ISSUER=hydra.issuer, AUTH_OIDC_AUDIENCE=AUDIENCE, ACCESS_RULES=RULES,
        AUTH_ADMINS="group:approvers"))


@pytest.fixture(scope="module")
def tokens(hydra):
    client = hydra.client([AUDIENCE])
    return {user: hydra.token(client, user, AUDIENCE) for user in ("alice", "bob", "carol")}


def test_each_caller_learns_the_verbs_the_agent_would_grant(guarded, tokens):
    bob = my_access(guarded, tokens["bob"])
    assert bob.status_code == 200, bob.text
    assert bob.json() == {"agent": "access-me", "principal": "user:bob", "groups": ["group:engineering"],
                          "authentication": True, "verbs": ["chat", "approve"]}
    carol = my_access(guarded, tokens["carol"]).json()
    assert (carol["principal"], carol["groups"], carol["verbs"]) == ("user:carol", ["group:sales"], [])
    alice = my_access(guarded, tokens["alice"]).json()  # an admin through her group
    assert alice["verbs"] == ["chat", "read", "approve", "admin"]
    key = my_access(guarded, KEY).json()
    assert (key["principal"], key["groups"], key["verbs"]) == ("key:1", [], ["read"])


def test_the_answer_is_what_the_agent_then_enforces(guarded, tokens):
    assert "chat" in my_access(guarded, tokens["bob"]).json()["verbs"]
    assert chat(guarded, "hi", headers={"Authorization": f"Bearer {tokens['bob']}"}).status_code == 200
    assert "chat" not in my_access(guarded, tokens["carol"]).json()["verbs"]
    refused = chat(guarded, "hi", headers={"Authorization": f"Bearer {tokens['carol']}"})
    assert refused.status_code == 403 and "grants 'chat'" in refused.json()["detail"]


def test_no_token_is_refused_as_on_every_route(guarded):
    response = my_access(guarded)
    assert response.status_code == 401 and "Bearer" in response.headers["WWW-Authenticate"]
    assert my_access(guarded, "not-a-key").status_code == 401


def test_an_open_agent_lets_everyone_do_everything(start, mock_model):
    agent = start("agent", "access-me-open", agent_env("access-me-open", mock_model))
    assert my_access(agent).json() == {"agent": "access-me-open", "principal": "anonymous", "groups": [],
                                       "authentication": False, "verbs": ["chat", "read", "approve", "admin"]}

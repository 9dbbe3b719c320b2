"""People, not keys (issue 29), against a real OpenID Connect issuer: Ory Hydra as a process on
127.0.0.1 (tests/support/hydra.py; scripts/setup-identity builds it). An agent with
AUTH_OIDC_ISSUER discovers the issuer's keys and accepts its access tokens as ``user:<sub>``
with the token's groups; a token for another audience, an expired one and another issuer's are
refused (401). spec.access (ACCESS_RULES) refuses a user without the grant (403 naming it);
approvers named by group decide, others do not, and the audit trail names them."""

from __future__ import annotations

import httpx
import pytest

from kaos.local.ports import free_port
from tests.support.hydra import Hydra, hydra_binary
from tests.support.polling import wait_until

from .approval_support import call, decide, gated_env, native, pending
from .conftest import agent_env, chat

AUDIENCE = "identity-agent"


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture(scope="module")
def client(hydra):
    return hydra.client([AUDIENCE, "another-agent"])


@pytest.fixture(autouse=True)
def clean_model(mock_model):
    mock_model.reset()


def oidc_env(hydra: Hydra, **extra) -> dict:
    return {"AUTH_OIDC_ISSUER": hydra.issuer, "AUTH_OIDC_AUDIENCE": AUDIENCE, **extra}


def test_the_issuers_users_are_accepted_and_its_bad_tokens_refused(start, mock_model, hydra, client, tmp_path):
    agent = start("agent", "identity-users", agent_env(
        "identity-users", mock_model, DEBUG_MOCK_RESPONSES=["hello"] * 4,
        **oidc_env(hydra, AUTH_OIDC_LEEWAY_SECONDS="0", AUTH_ADMINS="group:approvers")))
    alice = hydra.token(client, "alice", AUDIENCE)
    answer = chat(agent, "hi", session_id="alice-1", headers=bearer(alice))
    assert answer.status_code == 200, answer.text
    sessions = httpx.get(agent.url + "/memory/sessions", headers=bearer(alice), timeout=10).json()
    assert "alice-1" in sessions["sessions"]
    # alice is an admin through her group: the audit trail names her read as user:alice.
    trail = httpx.get(agent.url + "/audit", headers=bearer(alice), timeout=10).json()["events"]
    assert {"action": "admin.read", "user": "user:alice", "object": "/memory/sessions"}.items() <= trail[0].items()

    other_audience = chat(agent, "hi", headers=bearer(hydra.token(client, "alice", "another-agent")))
    assert other_audience.status_code == 401
    assert "audience" in other_audience.json()["detail"]

    stranger = Hydra(hydra_binary(), tmp_path)  # another issuer, its own keys
    try:
        foreign = stranger.token(stranger.client([AUDIENCE]), "alice", AUDIENCE)
    finally:
        stranger.stop()
    refused = chat(agent, "hi", headers=bearer(foreign))
    assert refused.status_code == 401 and "issuer" in refused.json()["detail"]

    short = hydra.token(hydra.client([AUDIENCE], token_lifespan="1s"), "alice", AUDIENCE)

    def expired() -> httpx.Response | None:
        response = chat(agent, "hi", headers=bearer(short))
        return response if response.status_code == 401 else None

    response = wait_until(expired, 10, interval=0.25, what="a 1 s token refused once it expired")
    assert "expired" in response.json()["detail"]
    assert "expired" in response.headers["WWW-Authenticate"]


def test_a_rotated_signing_key_is_fetched_when_a_token_names_it(start, mock_model, hydra, client):
    agent = start("agent", "identity-rotation", agent_env("identity-rotation", mock_model,
                                                          DEBUG_MOCK_RESPONSES=["hello"] * 6, **oidc_env(hydra)))
    before = hydra.token(client, "bob", AUDIENCE)
    assert chat(agent, "hi", headers=bearer(before)).status_code == 200  # the key set fetched
    hydra.provision("hydra.jwt.access-token")  # the issuer rotates: a new key, the old one gone
    after = hydra.token(client, "bob", AUDIENCE)
    # The new kid makes the agent fetch the set again, at most once per 10 s (the first fetch was just now).
    accepted = wait_until(lambda: chat(agent, "hi", headers=bearer(after)).status_code == 200, 30, interval=0.5,
                          what="a token signed with the rotated key accepted")
    assert accepted


def test_an_issuer_that_cannot_be_reached_is_said_so(start, mock_model, hydra, client):
    closed = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    agent = start("agent", "identity-unreached", agent_env(
        "identity-unreached", mock_model, AUTH_OIDC_ISSUER=closed, AUTH_OIDC_AUDIENCE=AUDIENCE))
    refused = chat(agent, "hi", headers=bearer(hydra.token(client, "bob", AUDIENCE)))
    assert refused.status_code == 401
    assert refused.json()["detail"] == "the token cannot be verified now: the issuer's keys could not be fetched"
    assert "Traceback" not in agent.log()


def test_access_rules_refuse_a_user_without_the_grant(start, mock_model, hydra, client):
    rules = '[{"verbs": ["chat"], "groups": ["engineering"]}, {"verbs": ["read"], "users": ["alice"]}]'
    agent = start("agent", "identity-access", agent_env(
        "identity-access", mock_model, DEBUG_MOCK_RESPONSES=["hello"] * 4,
        **oidc_env(hydra, ACCESS_RULES=rules, AUTH_ADMINS="user:alice")))
    bob, carol = hydra.token(client, "bob", AUDIENCE), hydra.token(client, "carol", AUDIENCE)
    assert chat(agent, "hi", headers=bearer(bob)).status_code == 200  # engineering may chat
    refused = chat(agent, "hi", headers=bearer(carol))
    assert refused.status_code == 403
    assert refused.json()["detail"] == ("user:carol may not chat on agent identity-access: no rule of its "
                                        "spec.access grants 'chat' to this user, one of its groups or this principal")
    unread = httpx.get(agent.url + "/memory/events", headers=bearer(bob), timeout=10)
    assert unread.status_code == 403 and "grants 'read'" in unread.json()["detail"]
    assert httpx.get(agent.url + "/audit", headers=bearer(bob), timeout=10).status_code == 403
    alice = hydra.token(client, "alice", AUDIENCE)
    trail = httpx.get(agent.url + "/audit", headers=bearer(alice), timeout=10).json()["events"]
    refusals = [(event["user"], event["object"]) for event in trail if event["action"] == "call.refused"]
    assert refusals == [("user:carol", "POST /v1/chat/completions"), ("user:bob", "GET /memory/events"),
                        ("user:bob", "GET /audit")]


def test_approvers_by_group_decide_and_the_audit_names_them(start, mock_model, hydra, client, approval_tools,
                                                           background):
    agent = start("agent", "identity-approvals", gated_env(
        "identity-approvals", mock_model, approval_tools,
        **oidc_env(hydra, TOOL_APPROVAL_APPROVERS="group:approvers", AUTH_ADMINS="group:approvers")))
    carol, bob, alice = (hydra.token(client, user, AUDIENCE) for user in ("carol", "bob", "alice"))
    mock_model.script(native(call("delete_file", path="/x")), "Deleted.")
    answer = background.submit(chat, agent, "delete /x", session_id="idp-1", headers=bearer(carol))
    [approval] = pending(agent, headers=bearer(carol))
    assert approval["requester"] == "user:carol"
    outsider = decide(agent, approval["id"], "approve", headers=bearer(bob))  # engineering only
    assert outsider.status_code == 403 and "not one of the approvers" in outsider.json()["detail"]
    decided = decide(agent, approval["id"], "approve", "looked fine", headers=bearer(alice))
    assert decided.status_code == 200 and decided.json()["decided_by"] == "user:alice"
    assert answer.result(timeout=60).json()["choices"][0]["message"]["content"] == "Deleted."
    trail = httpx.get(agent.url + "/audit", headers=bearer(alice), timeout=10).json()["events"]
    decisions = [(event["action"], event["user"], event["object"]) for event in trail
                 if event["action"].startswith("approval.")]
    assert decisions == [("approval.refused", "user:bob", f"approval/{approval['id']}"),
                         ("approval.approved", "user:alice", f"approval/{approval['id']}")]
    assert all(event["time"].endswith("+00:00") for event in trail)
    assert '"action":"approval.approved","user":"user:alice"' in agent.log()  # JSON lines in the agent's log

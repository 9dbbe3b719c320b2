"""Identity travels (issue 29, item 4), over real agent processes and a real OpenID Connect issuer
(Ory Hydra on 127.0.0.1, tests/support/hydra.py): a coordinator accepts the issuer's users and
delegates on their behalf; the signed on-behalf-of assertion (core/on_behalf.py) carries the user
and their groups, and the peer applies its own spec.access (ACCESS_RULES) and approvers to them."""

from __future__ import annotations

import json

import httpx
import pytest

from .approval_support import approvals, call, decide, gated_env, native, pending
from .conftest import agent_env, chat

AUDIENCE = "travel-coordinator"
WORKER_RULES = json.dumps([{"verbs": ["chat"], "groups": ["engineering"]},
                           {"verbs": ["approve"], "groups": ["approvers"]}])


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture(scope="module")
def client(hydra):
    return hydra.client([AUDIENCE])


@pytest.fixture(autouse=True)
def clean_model(mock_model):
    mock_model.reset()


@pytest.fixture(scope="module")
def pair(start, mock_model, approval_tools, hydra):
    """A worker that knows only API keys (key:1 the coordinator's, key:2 its admin's) and grants chat
    to group:engineering, approve to group:approvers; a coordinator that accepts every user of the issuer."""
    worker = start("agent", "travel-worker", gated_env(
        "travel-worker", mock_model, approval_tools, AUTH_API_KEYS="tw-coordinator-key,tw-admin-key",
        AUTH_ADMINS="key:2", ACCESS_RULES=WORKER_RULES, TOOL_APPROVAL_APPROVERS="group:approvers"))
    coordinator = start("agent", "travel-coord", agent_env(
        "travel-coord", mock_model, MODEL_TOOL_CALLING="native", PEER_AGENTS="travel-worker",
        PEER_AGENT_TRAVEL_WORKER_CARD_URL=worker.url + "/.well-known/agent",
        AUTH_OIDC_ISSUER=hydra.issuer, AUTH_OIDC_AUDIENCE=AUDIENCE, AUTH_OUTBOUND_TOKEN="tw-coordinator-key"))
    return coordinator, worker


def test_the_peers_own_rules_refuse_a_user_the_coordinator_accepted(pair, mock_model, hydra, client):
    coordinator, worker = pair
    carol = hydra.token(client, "carol", AUDIENCE)  # group sales: the worker grants chat to engineering only
    mock_model.script(native(call("delegate", agent="travel-worker", task="summarise")), "The worker refused.")
    answer = chat(coordinator, "ask the worker", session_id="travel-carol", headers=bearer(carol))
    assert answer.status_code == 200, answer.text  # the coordinator accepted carol
    events = httpx.get(coordinator.url + "/memory/events", params={"session_id": "travel-carol"},
                       headers=bearer(carol), timeout=10).json()["events"]
    [error] = [event["content"]["error"] for event in events if event["event_type"] == "delegation_error"]
    assert "answered HTTP 403" in error
    assert ("user:carol via key:1 may not chat on agent travel-worker: no rule of its spec.access grants "
            "'chat' to this user, one of its groups or this principal") in error
    trail = httpx.get(worker.url + "/audit", headers=bearer("tw-admin-key"), timeout=10).json()["events"]
    assert ("call.refused", "user:carol via key:1") in [(event["action"], event["user"]) for event in trail]


def test_a_group_grant_at_the_peer_admits_a_relayed_user_and_approvals_name_the_users(
        pair, mock_model, hydra, client, background):
    coordinator, worker = pair
    bob, alice = hydra.token(client, "bob", AUDIENCE), hydra.token(client, "alice", AUDIENCE)
    mock_model.script(native(call("delegate", agent="travel-worker", task="delete /t")),
                      native(call("delete_file", path="/t")), "Worker deleted it.", "Done.")
    answer = background.submit(chat, coordinator, "have /t deleted", session_id="travel-bob", headers=bearer(bob))
    # alice is in group:approvers: the worker's approvers and approve grant name the group, and match her.
    [entry] = pending(coordinator, headers=bearer(alice))  # bob's call, waiting in the worker
    assert entry["peer"] == "travel-worker" and entry["requester"] == "user:bob via key:1"
    assert approvals(coordinator, bearer(bob)) == []  # the worker grants bob neither read nor approve
    outsider = decide(coordinator, entry["id"], "approve", headers=bearer(bob))
    assert outsider.status_code == 403 and "grants 'approve'" in outsider.json()["detail"], outsider.text
    decided = decide(coordinator, entry["id"], "approve", headers=bearer(alice))
    assert decided.status_code == 200, decided.text
    assert decided.json()["decided_by"] == "user:alice via key:1"
    assert answer.result(timeout=60).json()["choices"][0]["message"]["content"] == "Done."
    trail = httpx.get(worker.url + "/audit", headers=bearer("tw-admin-key"), timeout=10).json()["events"]
    assert ("approval.approved", "user:alice via key:1") in [(event["action"], event["user"]) for event in trail]


WHOAMI = '''
def whoami() -> str:
    """Who called this tool."""
    who = caller()
    return f"{who.user}|{','.join(sorted(who.groups))}|{who.text}"
'''


def tool_agent(start, model, hydra, tools, name: str, **extra):
    return start("agent", name, agent_env(
        name, model, MODEL_TOOL_CALLING="native", MCP_SERVERS="idtools",
        MCP_SERVER_IDTOOLS_URL=tools.url + "/mcp", MCP_SERVER_IDTOOLS_TOKEN="it-agent-key",
        AUTH_OIDC_ISSUER=hydra.issuer, AUTH_OIDC_AUDIENCE=AUDIENCE, **extra))


def tool_result(agent, token: str, session: str) -> str:
    events = httpx.get(agent.url + "/memory/events", params={"session_id": session}, headers=bearer(token),
                       timeout=10).json()["events"]
    [result] = [event["content"]["result"] for event in events if event["event_type"] == "tool_result"]
    return result


def test_an_mcp_server_that_asks_for_identity_tells_its_tool_who_called(start, mock_model, hydra, client):
    tools = start("mcp", "idtools", {"MCP_TOOLS_STRING": WHOAMI, "MCP_SERVER_NAME": "idtools",
                                     "AUTH_API_KEYS": "it-agent-key"})
    forwarding = tool_agent(start, mock_model, hydra, tools, "travel-tools", MCP_SERVER_IDTOOLS_IDENTITY="forward")
    silent = tool_agent(start, mock_model, hydra, tools, "travel-tools-silent")
    alice = hydra.token(client, "alice", AUDIENCE)
    for agent in (forwarding, silent):
        mock_model.script(native(call("whoami")), "Told.")
        assert chat(agent, "who am I?", session_id="whoami", headers=bearer(alice)).status_code == 200
    assert tool_result(forwarding, alice, "whoami") == \
        "user:alice|group:approvers,group:engineering|user:alice via key:1"
    assert tool_result(silent, alice, "whoami") == "key:1||key:1"  # not asked: the agent's key only


def test_a_relayed_user_reaches_the_peers_mcp_tool(start, mock_model, hydra, client):
    tools = start("mcp", "idtools-peer", {"MCP_TOOLS_STRING": WHOAMI, "MCP_SERVER_NAME": "idtools",
                                          "AUTH_API_KEYS": "it-worker-key"})
    worker = start("agent", "travel-tool-worker", agent_env(
        "travel-tool-worker", mock_model, MODEL_TOOL_CALLING="native", MCP_SERVERS="idtools",
        MCP_SERVER_IDTOOLS_URL=tools.url + "/mcp", MCP_SERVER_IDTOOLS_TOKEN="it-worker-key",
        MCP_SERVER_IDTOOLS_IDENTITY="forward", AUTH_API_KEYS="ttw-coordinator-key", ACCESS_RULES=WORKER_RULES))
    coordinator = start("agent", "travel-tool-coord", agent_env(
        "travel-tool-coord", mock_model, MODEL_TOOL_CALLING="native", PEER_AGENTS="travel-tool-worker",
        PEER_AGENT_TRAVEL_TOOL_WORKER_CARD_URL=worker.url + "/.well-known/agent",
        AUTH_OIDC_ISSUER=hydra.issuer, AUTH_OIDC_AUDIENCE=AUDIENCE, AUTH_OUTBOUND_TOKEN="ttw-coordinator-key"))
    bob = hydra.token(client, "bob", AUDIENCE)
    mock_model.script(native(call("delegate", agent="travel-tool-worker", task="who am I?")),
                      native(call("whoami")), "You are bob.", "Done.")
    assert chat(coordinator, "ask", session_id="relayed-whoami", headers=bearer(bob)).status_code == 200
    events = httpx.get(coordinator.url + "/memory/events", params={"session_id": "relayed-whoami"},
                       headers=bearer(bob), timeout=10).json()["events"]
    [response] = [event["content"]["response"] for event in events if event["event_type"] == "delegation_response"]
    assert response == "You are bob."
    # The worker's tool call went for bob, relayed by the coordinator's key and then the worker's.
    assert "user:bob|group:engineering|user:bob via key:1 via key:1" in json.dumps(mock_model.requests())

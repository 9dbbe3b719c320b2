"""People, not keys (issue 29) under the control plane: an Agent with spec.auth.oidc naming a real
issuer (Ory Hydra as a process on 127.0.0.1, tests/support/hydra.py), spec.access and group
approvers; through the gateway a user of a granted group chats, a user outside it gets 403 naming
the grant, and the audit trail, read by an admin group's user, names them. From the Agent
resource through the reconcile core, the agent chart's env and the runtime, as `kaos up` runs it
and as a cluster does.

In a cluster (the real-cluster tier) the issuer is Hydra's pod of cluster/hydra.yaml (namespace
kaos-identity), which scripts/cluster up runs: the agent's pod fetches its JWKS at the Service's
DNS name, the tokens' iss, and the test signs the users in through kubectl port-forwards to its
public and admin ports."""

from __future__ import annotations

import base64

import httpx
import jwt
import pytest

from e2e.conftest import (
    BACKEND,
    create_agent_resource,
    create_custom_resource,
    create_mcpserver_resource,
    deploy_and_wait,
    fenced,
    port_forward,
    wait_for_status,
)
from kaos.local.ports import free_port
from tests.support.hydra import (
    CLUSTER_ADMIN_PORT,
    CLUSTER_NAMESPACE,
    CLUSTER_PUBLIC_PORT,
    CLUSTER_SERVICE,
    Issuer,
    running_hydra,
)

pytestmark = [pytest.mark.e2e, pytest.mark.dataplane]

AUDIENCE = "kaos-e2e"
# cluster/hydra.yaml: its Service, and the issuer its tokens name.
CLUSTER_ISSUER = f"http://{CLUSTER_SERVICE}.{CLUSTER_NAMESPACE}.svc.cluster.local:{CLUSTER_PUBLIC_PORT}"


@pytest.fixture(scope="module")
def hydra(tmp_path_factory):
    if BACKEND != "cluster":
        with running_hydra(tmp_path_factory.mktemp("hydra")) as issuer:
            yield issuer
        return
    public, admin = free_port(), free_port()
    forwards = [port_forward(CLUSTER_NAMESPACE, CLUSTER_SERVICE, public, CLUSTER_PUBLIC_PORT),
                port_forward(CLUSTER_NAMESPACE, CLUSTER_SERVICE, admin, CLUSTER_ADMIN_PORT)]
    try:
        issuer = Issuer(CLUSTER_ISSUER, f"http://127.0.0.1:{admin}/admin", f"http://127.0.0.1:{public}")
        issuer.provision_signing_keys()
        yield issuer
    finally:
        for forward in forwards:
            forward.terminate()
            forward.wait(10)


@pytest.fixture(scope="module")
def tokens(hydra) -> dict[str, str]:
    client = hydra.client([AUDIENCE])
    return {user: hydra.token(client, user, AUDIENCE) for user in ("alice", "bob", "carol")}


@pytest.fixture(scope="module")
def guarded_agent(test_namespace, shared_modelapi, hydra) -> str:
    resource = create_agent_resource(test_namespace, "identity-agent", shared_modelapi)
    resource["spec"]["auth"] = {"oidc": {"issuer": hydra.issuer, "audience": AUDIENCE},
                                "admins": ["group:approvers"]}
    resource["spec"]["access"] = [{"verbs": ["chat", "read"], "groups": ["engineering"]}]
    return deploy_and_wait(resource, test_namespace)


async def chat(url: str, token: str | None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx.AsyncClient(timeout=120) as client:
        return await client.post(f"{url}/v1/chat/completions", headers=headers,
                                 json={"messages": [{"role": "user", "content": "hello"}]})


def test_the_tokens_name_the_issuer_the_agent_trusts(hydra, tokens):
    claims = jwt.decode(tokens["bob"], options={"verify_signature": False})
    assert claims["iss"] == hydra.issuer and claims["groups"] == ["engineering"]
    if BACKEND == "cluster":
        assert hydra.issuer == CLUSTER_ISSUER


async def test_users_and_groups_decide_who_may_chat(guarded_agent, tokens):
    assert (await chat(guarded_agent, None)).status_code == 401
    allowed = await chat(guarded_agent, tokens["bob"])
    assert allowed.status_code == 200, allowed.text
    refused = await chat(guarded_agent, tokens["carol"])
    assert refused.status_code == 403
    assert refused.json()["detail"].startswith("user:carol may not chat on agent identity-agent: "
                                               "no rule of its spec.access grants 'chat'")
    async with httpx.AsyncClient(timeout=30) as client:
        trail = await client.get(f"{guarded_agent}/audit", headers={"Authorization": f"Bearer {tokens['alice']}"})
    assert trail.status_code == 200, trail.text
    assert [(event["action"], event["user"]) for event in trail.json()["events"]
            if event["action"] == "call.refused"] == [("call.refused", "user:carol")]


# Identity travels (issue 29): a coordinator that accepts the issuer's users delegates, with its own
# key (spec.auth.credentials), to a worker that knows only API keys and grants chat to engineering.
WORKER_KEYS = "travel-coordinator-key,travel-admin-key"  # key:1 the coordinator's, key:2 the worker's admin
WHOAMI = '''
def whoami() -> str:
    """Who called this tool."""
    return caller().text
'''


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def secret(namespace: str, name: str, **data: str) -> dict:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": namespace},
            "data": {key: base64.b64encode(value.encode()).decode() for key, value in data.items()}}


def key_ref(name: str, key: str) -> dict:
    return {"secretKeyRef": {"name": name, "key": key}}


@pytest.fixture(scope="module")
def travel(test_namespace, shared_modelapi, hydra) -> dict[str, str]:
    """The worker (its own mock replies) and the coordinator (scripted by the mock model server)."""
    create_custom_resource(secret(test_namespace, "travel-keys", accepted=WORKER_KEYS,
                                  coordinator="travel-coordinator-key"), test_namespace)
    worker = create_agent_resource(test_namespace, "travel-worker", shared_modelapi,
                                   description="Worker of the identity e2e", mock_responses=["worker summary ready"])
    # No issuer here: the group grant applies to the users the coordinator relays with their groups.
    worker["spec"]["auth"] = {"apiKeys": key_ref("travel-keys", "accepted"), "admins": ["key:2"]}
    worker["spec"]["access"] = [{"verbs": ["chat"], "groups": ["engineering"]}]
    coordinator = create_agent_resource(test_namespace, "travel-coord", shared_modelapi, access=["travel-worker"])
    coordinator["spec"]["auth"] = {"oidc": {"issuer": hydra.issuer, "audience": AUDIENCE},
                                   "credentials": key_ref("travel-keys", "coordinator")}
    coordinator["spec"]["access"] = [{"verbs": ["chat", "read"], "groups": ["engineering", "sales"]}]
    return {"worker": deploy_and_wait(worker, test_namespace), "coordinator": deploy_and_wait(coordinator, test_namespace)}


async def converse(url: str, token: str, session: str) -> tuple[httpx.Response, list[dict]]:
    """One chat turn as the token's user, and the session's memory events as that user reads them."""
    async with httpx.AsyncClient(timeout=120) as client:
        answer = await client.post(f"{url}/v1/chat/completions", headers=bearer(token), json={
            "messages": [{"role": "user", "content": "ask the worker"}], "session_id": session})
        events = await client.get(f"{url}/memory/events", headers=bearer(token),
                                  params={"session_id": session, "limit": 500})
    assert events.status_code == 200, events.text
    return answer, events.json()["events"]


async def test_a_delegation_carries_the_user_and_the_peers_rules_refuse_one_the_coordinator_accepted(
        travel, tokens, mock_model_server):
    mock_model_server.reset()
    mock_model_server.script([fenced("delegate", {"agent": "travel-worker", "task": "summarise"}), "Relayed.",
                              fenced("delegate", {"agent": "travel-worker", "task": "summarise"}), "Refused."])
    answer, events = await converse(travel["coordinator"], tokens["bob"], "travel-bob")
    assert answer.status_code == 200, answer.text
    assert [e["content"]["response"] for e in events if e["event_type"] == "delegation_response"] == \
        ["worker summary ready"]

    answer, events = await converse(travel["coordinator"], tokens["carol"], "travel-carol")
    assert answer.status_code == 200, answer.text  # the coordinator admits carol (group sales)
    [error] = [e["content"]["error"] for e in events if e["event_type"] == "delegation_error"]
    assert "answered HTTP 403" in error
    assert ("user:carol via key:1 may not chat on agent travel-worker: no rule of its spec.access grants "
            "'chat'") in error
    async with httpx.AsyncClient(timeout=30) as client:
        trail = (await client.get(f"{travel['worker']}/audit", headers=bearer("travel-admin-key"))).json()["events"]
    assert ("call.refused", "user:carol via key:1") in [(e["action"], e["user"]) for e in trail]
    assert not any("bob" in e["user"] for e in trail if e["action"] == "call.refused")


async def test_an_mcp_tool_receives_the_user(test_namespace, shared_modelapi, hydra, tokens, mock_model_server):
    create_custom_resource(secret(test_namespace, "idtools-keys", accepted="idtools-agent-key",
                                  agent="idtools-agent-key"), test_namespace)
    tools = create_mcpserver_resource(test_namespace, "idtools", WHOAMI)
    tools["spec"]["identity"] = "forward"
    tools["spec"]["auth"] = {"apiKeys": key_ref("idtools-keys", "accepted")}
    deploy_and_wait(tools, test_namespace)
    agent = create_agent_resource(test_namespace, "idtools-user", shared_modelapi, mcp_servers=["idtools"])
    agent["spec"]["auth"] = {"oidc": {"issuer": hydra.issuer, "audience": AUDIENCE},
                             "credentials": key_ref("idtools-keys", "agent")}
    agent["spec"]["access"] = [{"verbs": ["chat", "read"], "groups": ["engineering"]}]
    url = deploy_and_wait(agent, test_namespace)
    wait_for_status("Agent", "idtools-user", test_namespace, "Ready", timeout=120)  # its tools discovered
    mock_model_server.reset()
    mock_model_server.script([fenced("tool_call", {"tool": "whoami", "arguments": {}}), "Told."])
    answer, events = await converse(url, tokens["alice"], "idtools-alice")
    assert answer.status_code == 200, answer.text
    assert [str(e["content"]["result"]) for e in events if e["event_type"] == "tool_result"] == \
        ["user:alice via key:1"]

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

import httpx
import jwt
import pytest

from e2e.conftest import BACKEND, create_agent_resource, deploy_and_wait, port_forward
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

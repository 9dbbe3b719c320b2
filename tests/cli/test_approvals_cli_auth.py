"""`kaos approvals` against an agent with spec.auth and spec.approval.approvers (issue 26): `kaos up
--detach` of examples/approvals/ with two API keys, the second the only approver. The requester's
token lists its own call but cannot decide it (HTTP 403 with the agent's reason, one line), the
approver's decides it, and `decided_by` names the approver; `kaos audit` (the approver is an admin
too) shows the refusal and the decision, and refuses the requester's token with the agent's reason."""

from __future__ import annotations

import base64
import json
import threading

import httpx
import pytest
import yaml

from tests.support.kaos_cli import kaos_running
from tests.support.polling import wait_until

from .test_approvals_cli import APPROVED_ANSWER, SCRIPT, scripted

pytestmark = pytest.mark.timeout(400)

REQUESTER, APPROVER = "cli-requester-key", "cli-approver-key"  # key:1, key:2


def guarded(folder):
    """The scripted example, with the agent's keys in a Secret and key:2 its one approver."""
    path = folder / "approvals.yaml"
    documents = list(yaml.safe_load_all(path.read_text()))
    for document in documents:
        if document["kind"] == "Agent":
            document["spec"]["auth"] = {"apiKeys": {"secretKeyRef": {"name": "ops-keys", "key": "keys"}}}
            document["spec"]["approval"]["approvers"] = ["key:2"]
            document["spec"]["auth"]["admins"] = ["key:2"]  # reads the audit trail
    keys = base64.b64encode(f"{REQUESTER},{APPROVER}".encode()).decode()
    documents.append({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "ops-keys"}, "data": {"keys": keys}})
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False))
    return folder


@pytest.fixture(scope="module")
def kaos(tmp_path_factory):
    base = tmp_path_factory.mktemp("approvals-cli-auth")
    with kaos_running(base / "home", guarded(scripted(base / "manifests", SCRIPT))) as kaos:
        yield kaos


def test_the_requester_cannot_decide_and_the_approver_can(kaos):
    answer: list[httpx.Response] = []
    chat = threading.Thread(daemon=True, target=lambda: answer.append(httpx.post(
        f"{kaos.url}/default/agent/ops/v1/chat/completions", headers={"Authorization": f"Bearer {REQUESTER}"},
        json={"messages": [{"role": "user", "content": "Delete the note called groceries"}]}, timeout=120)))
    chat.start()

    def listed(token: str) -> list[dict]:
        result = kaos.kaos("approvals", "list", "-o", "json", "--token", token)
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)["approvals"]

    [approval] = wait_until(lambda: listed(REQUESTER), timeout=60, interval=0.3, what="the requester's call listed")
    assert approval["requester"] == "key:1"
    own = kaos.kaos("approvals", "approve", approval["id"], "--token", REQUESTER)
    assert own.returncode == 1 and "Traceback" not in own.stderr
    assert "answered HTTP 403: key:1 asked for this call" in own.stderr, own.stderr
    approved = kaos.kaos("approvals", "approve", approval["id"], "--reason", "ok", "--token", APPROVER)
    assert approved.returncode == 0, approved.stderr
    assert approved.stdout.strip() == (
        f"approval {approval['id']} of agent default/ops (delete_note) approved by key:2: ok")
    chat.join(60)
    assert answer and answer[0].json()["choices"][0]["message"]["content"] == APPROVED_ANSWER


def test_kaos_audit_names_who_was_refused_and_who_decided(kaos):
    """After the decision above: the trail, read by an admin, and refused to the requester (no admin)."""
    trail = kaos.kaos("audit", "ops", "-o", "json", "--token", APPROVER)
    assert trail.returncode == 0, trail.stderr
    events = [(event["action"], event["user"]) for event in json.loads(trail.stdout)["events"]]
    assert ("approval.refused", "key:1") in events and ("approval.approved", "key:2") in events
    table = kaos.kaos("audit", "ops", "--token", APPROVER)
    assert table.stdout.splitlines()[0].split() == ["TIME", "ACTION", "USER", "OBJECT", "DETAIL"]
    refused = kaos.kaos("audit", "ops", "--token", REQUESTER)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "answered HTTP 403: key:1 may not read the audit trail of agent ops" in refused.stderr, refused.stderr

"""Who may decide an approval (issue 26), over real agent processes: the approvers an agent lists
(TOOL_APPROVAL_APPROVERS) and nobody else, never the requester with authentication on, never an
anonymous caller an open coordinator relays; and the person carried through delegation in the
signed on-behalf-of header (a peer records and authorises ``key:2 via key:1``, a chain re-signs it
at each hop, a header not signed with the request's own credential is ignored)."""

from __future__ import annotations

import time
import uuid

import httpx
import pytest

from kaos_runtime.core.on_behalf import HEADER as ON_BEHALF_HEADER
from kaos_runtime.core.on_behalf import sign
from tests.support.polling import wait_until

from .approval_support import approvals, call, decide, gated_env, native, pending
from .conftest import agent_env, chat


def bearer(key: str) -> dict:
    return {"Authorization": f"Bearer {key}"}


def peer_env(name: str, model, peer, **extra) -> dict:
    key = peer.env["AGENT_NAME"].upper().replace("-", "_")
    return agent_env(name, model, MODEL_TOOL_CALLING="native", PEER_AGENTS=peer.env["AGENT_NAME"],
                     **{f"PEER_AGENT_{key}_CARD_URL": peer.url + "/.well-known/agent"}, **extra)


@pytest.fixture(autouse=True)
def clean_model(mock_model):
    mock_model.reset()


def test_only_the_listed_approvers_decide_and_see_what_they_may_decide(start, mock_model, approval_tools,
                                                                        background):
    keys = ["ap-requester", "ap-bystander", "ap-approver"]  # key:1, key:2, key:3
    agent = start("agent", "approvers", gated_env("approvers", mock_model, approval_tools,
                                                  AUTH_API_KEYS=",".join(keys), TOOL_APPROVAL_APPROVERS="key:3"))
    mock_model.script(native(call("delete_file", path="/x")), "Deleted.")
    answer = background.submit(chat, agent, "delete /x", session_id="ap-1", headers=bearer(keys[0]))
    [approval] = pending(agent, headers=bearer(keys[0]))  # the requester sees its own session's call
    assert approval["requester"] == "key:1"
    own = decide(agent, approval["id"], "approve", headers=bearer(keys[0]))
    assert own.status_code == 403 and "key:1 asked for this call" in own.json()["detail"]
    assert approvals(agent, bearer(keys[1])) == []  # neither its session's nor one it may decide
    stranger = decide(agent, approval["id"], "approve", headers=bearer(keys[1]))
    assert stranger.status_code == 403
    assert stranger.json()["detail"] == ("key:2 may not decide approvals here: it is not one of the approvers "
                                         "(spec.approval.approvers, TOOL_APPROVAL_APPROVERS)")
    assert [a["id"] for a in approvals(agent, bearer(keys[2]))] == [approval["id"]]
    decided = decide(agent, approval["id"], "approve", "checked", headers=bearer(keys[2]))
    assert decided.status_code == 200 and decided.json()["decided_by"] == "key:3"
    assert answer.result(timeout=60).json()["choices"][0]["message"]["content"] == "Deleted."


def test_an_open_coordinators_callers_can_neither_list_nor_decide_a_guarded_peers_approvals(
        start, mock_model, approval_tools, background):
    worker = start("agent", "guarded-worker", gated_env(
        "guarded-worker", mock_model, approval_tools, AUTH_API_KEYS="gw-coordinator-key,gw-person-key"))
    coordinator = start("agent", "open-coord", peer_env("open-coord", mock_model, worker,
                                                         AUTH_OUTBOUND_TOKEN="gw-coordinator-key"))
    mock_model.script(native(call("delegate", agent="guarded-worker", task="delete /w")),
                      native(call("delete_file", path="/w")), "Worker deleted it.", "Done.")
    answer = background.submit(chat, coordinator, "have /w deleted")
    [approval] = pending(worker, headers=bearer("gw-person-key"))
    assert approvals(coordinator) == []  # the peer refuses the relayed listing
    for headers in ({}, {"X-KAOS-Decided-By": "key:2"}, {ON_BEHALF_HEADER: "key:2"}):
        refused = decide(coordinator, approval["id"], "approve", headers=headers)
        assert refused.status_code == 403, refused.text
        assert "anonymous caller" in refused.json()["detail"]
    assert approval["requester"] == "anonymous via key:1"  # the open coordinator's caller, via its key
    assert approvals(worker, bearer("gw-person-key"))[0]["status"] == "pending"
    decided = decide(worker, approval["id"], "approve", headers=bearer("gw-person-key"))
    assert decided.status_code == 200 and decided.json()["decided_by"] == "key:2"
    assert answer.result(timeout=60).json()["choices"][0]["message"]["content"] == "Done."


@pytest.fixture(scope="module")
def guarded_pair(start, mock_model, approval_tools):
    worker = start("agent", "pair-worker", gated_env("pair-worker", mock_model, approval_tools,
                                                     AUTH_API_KEYS="pw-coordinator-key,pw-direct-key"))
    coordinator = start("agent", "pair-coord", peer_env("pair-coord", mock_model, worker,
                                                        AUTH_API_KEYS="pc-alice-key,pc-bob-key",
                                                        AUTH_OUTBOUND_TOKEN="pw-coordinator-key"))
    return coordinator, worker


def test_the_person_travels_with_relayed_listings_and_decisions(guarded_pair, mock_model, background):
    coordinator, worker = guarded_pair
    mock_model.script(native(call("delegate", agent="pair-worker", task="delete /p")),
                      native(call("delete_file", path="/p")), "Worker deleted it.", "Done.")
    answer = background.submit(chat, coordinator, "have /p deleted", headers=bearer("pc-alice-key"))
    [entry] = pending(coordinator, headers=bearer("pc-alice-key"))  # alice's own call, waiting in the peer
    assert entry["peer"] == "pair-worker" and entry["requester"] == "key:1 via key:1"
    assert [a["id"] for a in approvals(coordinator, bearer("pc-bob-key"))] == [entry["id"]]
    own = decide(coordinator, entry["id"], "approve", headers=bearer("pc-alice-key"))
    assert own.status_code == 403 and "key:1 via key:1 asked for this call" in own.json()["detail"]
    decided = decide(coordinator, entry["id"], "approve", headers=bearer("pc-bob-key"))
    assert decided.status_code == 200 and decided.json()["decided_by"] == "key:2 via key:1"
    assert answer.result(timeout=60).json()["choices"][0]["message"]["content"] == "Done."


def test_a_peer_trusts_only_an_on_behalf_of_signed_with_the_requests_own_credential(guarded_pair):
    _, worker = guarded_pair

    def session_as(key: str, on_behalf: str | None) -> str:
        session = f"obo-{uuid.uuid4().hex[:8]}"
        headers = {**bearer(key), "X-Session-ID": session, **({ON_BEHALF_HEADER: on_behalf} if on_behalf else {})}
        assert chat(worker, "hello", headers=headers).status_code == 200
        return session

    def readable(key: str, session: str) -> bool:
        return httpx.get(worker.url + "/memory/events", params={"session_id": session}, headers=bearer(key),
                         timeout=10).status_code == 200

    now = time.time()
    signed = session_as("pw-coordinator-key", sign("key:7", (), "pw-coordinator-key", "pair-worker", now))
    assert not readable("pw-coordinator-key", signed)  # the person's, "key:7 via key:1": not the key's own
    for forged in (sign("key:7", (), "pw-coordinator-key", "pair-worker", now),  # signed with another key
                   sign("key:7", (), "pw-direct-key", "other-agent", now),  # for another agent
                   sign("key:7", (), "pw-direct-key", "pair-worker", now - 600),  # expired
                   "key:7"):  # unsigned
        assert readable("pw-direct-key", session_as("pw-direct-key", forged)), forged  # ignored: key:2's own


def test_a_chain_carries_the_original_person_re_signed_at_each_hop(start, mock_model, approval_tools, background):
    last = start("agent", "chain-c", gated_env("chain-c", mock_model, approval_tools,
                                               AUTH_API_KEYS="c-approver,c-1,c-2,c-from-b"))
    middle = start("agent", "chain-b", peer_env("chain-b", mock_model, last, AUTH_API_KEYS="b-1,b-2,b-from-a",
                                                AUTH_OUTBOUND_TOKEN="c-from-b"))
    first = start("agent", "chain-a", peer_env("chain-a", mock_model, middle, AUTH_API_KEYS="a-1,a-user",
                                               AUTH_OUTBOUND_TOKEN="b-from-a"))
    mock_model.script(native(call("delegate", agent="chain-b", task="ask c")),
                      native(call("delegate", agent="chain-c", task="delete /c")),
                      native(call("delete_file", path="/c")), "C deleted it.", "B got it done.", "All done.")
    answer = background.submit(chat, first, "have /c deleted", headers=bearer("a-user"))
    [approval] = pending(last, headers=bearer("c-approver"))
    # a-user is key:2 of A; A is key:3 of B; B is key:4 of C
    assert approval["requester"] == "key:2 via key:3 via key:4"
    assert wait_until(lambda: approvals(first, bearer("a-user")), 30, what="the call nested two hops down")
    decided = decide(last, approval["id"], "approve", headers=bearer("c-approver"))
    assert decided.status_code == 200 and decided.json()["decided_by"] == "key:1"
    assert answer.result(timeout=60).json()["choices"][0]["message"]["content"] == "All done."


def test_over_a2a_the_requesters_own_decision_is_refused_with_the_reason(start, mock_model, approval_tools):
    agent = start("agent", "a2a-approvers", gated_env("a2a-approvers", mock_model, approval_tools,
                                                      AUTH_API_KEYS="aa-requester,aa-approver"))

    def send(text: str, **extra) -> dict:
        body = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {
            "kind": "message", "role": "user", "messageId": uuid.uuid4().hex, "parts": [{"kind": "text", "text": text}],
            **extra}}}
        return httpx.post(agent.url + "/a2a", json=body, headers=bearer("aa-requester"), timeout=60).json()["result"]

    mock_model.script(native(call("delete_file", path="/a2a")), "Deleted over A2A.")
    task = send("delete /a2a")
    assert task["status"]["state"] == "input-required"
    assert "Another principal decides it with POST /approvals/<id>" in task["status"]["message"]["parts"][0]["text"]
    again = send("approve", taskId=task["id"], contextId=task["contextId"])
    assert again["status"]["state"] == "input-required"
    assert again["status"]["message"]["parts"][0]["text"].startswith(
        "key:1 asked for this call: with authentication on, the requester of a call cannot decide it")
    [approval] = pending(agent, headers=bearer("aa-approver"))
    assert decide(agent, approval["id"], "approve", headers=bearer("aa-approver")).status_code == 200

    def completed():
        body = {"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"id": task["id"]}}
        got = httpx.post(agent.url + "/a2a", json=body, headers=bearer("aa-requester"), timeout=10).json()["result"]
        return got if got["status"]["state"] == "completed" else None

    done = wait_until(completed, 30, what="the task completed")
    assert done["artifacts"][-1]["parts"][0]["text"] == "Deleted over A2A."

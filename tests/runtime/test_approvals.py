"""Approval before gated tool calls over real processes: an agent, a python-string MCP server and
the mock model; the OpenAI API waiting while a call is pending, plain and streamed (with the
``openai`` client), the decisions, the timeout rules, the audit events, auth and the errors."""

from __future__ import annotations

import json

import httpx
import openai
import pytest

from tests.support.polling import wait_until

from .approval_support import call, decide, gated_env, native, pending, tool_messages
from .conftest import agent_env, chat, events


def kinds(agent, session: str) -> list[str]:
    return [event["event_type"] for event in events(agent, session_id=session, limit=200)["events"]]


def gated_agent(start, mock_model, approval_tools, name: str, **extra):
    return start("agent", name, gated_env(name, mock_model, approval_tools, **extra))


@pytest.fixture(scope="module")
def agent(start, mock_model, approval_tools):
    return gated_agent(start, mock_model, approval_tools, "gated", TOOL_APPROVAL_REQUIRED="delete_file")


pytestmark = pytest.mark.usefixtures("clean_model")


def test_approved_call_runs_and_rejected_call_goes_back_to_the_model(agent, mock_model, background):
    mock_model.script(native(call("delete_file", path="/tmp/a")), "Deleted it.")
    answer = background.submit(chat, agent, "delete /tmp/a", session_id="approve-1")
    [approval] = pending(agent, session_id="approve-1")
    assert approval["tool"] == "delete_file" and approval["arguments"] == {"path": "/tmp/a"}
    assert approval["status"] == "pending" and approval["session_id"] == "approve-1"
    assert approval["agent"] == "gated" and approval["decided_by"] is None
    assert approval["expires_at"] > approval["requested_at"]
    assert "tool_call" not in kinds(agent, "approve-1")  # nothing ran yet
    assert not answer.done()

    decided = decide(agent, approval["id"], "approve", "looks fine")
    assert decided.status_code == 200, decided.text
    assert decided.json()["status"] == "approved" and decided.json()["decided_by"] == "anonymous"
    reply = answer.result(timeout=60)
    assert reply.status_code == 200 and reply.json()["choices"][0]["message"]["content"] == "Deleted it."
    assert tool_messages(mock_model.requests()[-1]) == ["deleted /tmp/a"]
    timeline = kinds(agent, "approve-1")
    assert timeline.index("approval_requested") < timeline.index("approval_granted") < timeline.index("tool_call")
    granted = next(e for e in events(agent, session_id="approve-1")["events"] if e["event_type"] == "approval_granted")
    assert granted["content"]["approval_id"] == approval["id"] and granted["content"]["decided_by"] == "anonymous"
    assert granted["content"]["reason"] == "looks fine"

    mock_model.reset()
    mock_model.script(native(call("delete_file", path="/etc")), "I was not allowed to.")
    answer = background.submit(chat, agent, "delete /etc", session_id="reject-1")
    [approval] = pending(agent, session_id="reject-1")
    assert decide(agent, approval["id"], "reject", "never /etc").json()["status"] == "rejected"
    assert answer.result(timeout=60).json()["choices"][0]["message"]["content"] == "I was not allowed to."
    [result] = tool_messages(mock_model.requests()[-1])
    assert "not run" in result and "never /etc" in result
    timeline = kinds(agent, "reject-1")
    assert "approval_rejected" in timeline and "tool_call" not in timeline
    assert [a["id"] for a in httpx.get(agent.url + "/approvals").json()["approvals"]] == []  # none pending
    listed = httpx.get(agent.url + "/approvals", params={"status": "all", "session_id": "reject-1"}).json()
    assert [a["status"] for a in listed["approvals"]] == ["rejected"]


def test_ungated_tool_runs_without_asking(agent, mock_model):
    mock_model.script(native(call("read_file", path="/tmp/b")), "Read it.")
    assert chat(agent, "read", session_id="free-1").json()["choices"][0]["message"]["content"] == "Read it."
    assert "approval_requested" not in kinds(agent, "free-1")


def test_two_calls_in_one_step_are_decided_one_by_one(agent, mock_model, background):
    mock_model.script(native(call("delete_file", path="keep"), call("delete_file", path="drop"),
                             call("read_file", path="r")), "Two of three.")
    answer = background.submit(chat, agent, "two", session_id="two-1")
    found = pending(agent, 2, session_id="two-1")
    by_path = {a["arguments"]["path"]: a for a in found}
    assert decide(agent, by_path["drop"]["id"], "reject", "no").status_code == 200
    assert not answer.done()  # the other still waits
    assert decide(agent, by_path["keep"]["id"], "approve").status_code == 200
    assert answer.result(timeout=60).json()["choices"][0]["message"]["content"] == "Two of three."
    results = tool_messages(mock_model.requests()[-1])
    assert results[0] == "deleted keep" and "not run" in results[1] and results[2] == "contents of r"
    tool_calls = [e["content"] for e in events(agent, session_id="two-1")["events"] if e["event_type"] == "tool_call"]
    assert sorted(c["arguments"]["path"] for c in tool_calls) == ["keep", "r"]


def test_unknown_and_decided_approvals_and_bad_bodies(agent, mock_model, background):
    assert decide(agent, "apr-nothing", "approve").status_code == 404
    mock_model.script(native(call("delete_file", path="x")), "ok")
    answer = background.submit(chat, agent, "x", session_id="conflict-1")
    [approval] = pending(agent, session_id="conflict-1")
    for body in ({"decision": "maybe"}, ["approve"], {"decision": "approve", "reason": 3}):
        refused = httpx.post(f"{agent.url}/approvals/{approval['id']}", json=body, timeout=10)
        assert refused.status_code == 400 and refused.json()["detail"]
    assert httpx.post(f"{agent.url}/approvals/{approval['id']}", content=b"{", timeout=10,
                      headers={"Content-Type": "application/json"}).status_code == 400
    assert httpx.get(agent.url + "/approvals", params={"status": "nope"}).status_code == 400
    assert decide(agent, approval["id"], "approve").status_code == 200
    again = decide(agent, approval["id"], "reject")
    assert again.status_code == 409 and again.json()["approval"]["status"] == "approved"
    assert answer.result(timeout=60).status_code == 200


def test_timeout_rejects_then_proceeds(start, mock_model, approval_tools):
    rejecting = gated_agent(start, mock_model, approval_tools, "times-out", TOOL_APPROVAL_REQUIRED="delete_file",
                            TOOL_APPROVAL_TIMEOUT_SECONDS="1")
    mock_model.script(native(call("delete_file", path="t")), "Timed out.")
    assert chat(rejecting, "t", session_id="timeout-1").json()["choices"][0]["message"]["content"] == "Timed out."
    [result] = tool_messages(mock_model.requests()[-1])
    assert "no decision within 1 s" in result and "not run" in result
    timeline = kinds(rejecting, "timeout-1")
    assert "approval_expired" in timeline and "tool_call" not in timeline
    [expired] = httpx.get(rejecting.url + "/approvals", params={"status": "expired"}).json()["approvals"]
    assert decide(rejecting, expired["id"], "approve").status_code == 409

    mock_model.reset()
    proceeding = gated_agent(start, mock_model, approval_tools, "proceeds", TOOL_APPROVAL_REQUIRED="mcp:files",
                             TOOL_APPROVAL_TIMEOUT_SECONDS="1", TOOL_APPROVAL_ON_TIMEOUT="proceed")
    mock_model.script(native(call("read_file", path="p")), "Proceeded.")
    assert chat(proceeding, "p", session_id="timeout-2").json()["choices"][0]["message"]["content"] == "Proceeded."
    assert tool_messages(mock_model.requests()[-1]) == ["contents of p"]  # mcp:files gates read_file too
    timeline = kinds(proceeding, "timeout-2")
    assert timeline.index("approval_expired") < timeline.index("tool_call")


def test_tools_annotated_destructive_are_gated(start, mock_model, approval_tools):
    hinted = gated_agent(start, mock_model, approval_tools, "hinted", TOOL_APPROVAL_REQUIRED="",
                         TOOL_APPROVAL_FROM_ANNOTATIONS="true", TOOL_APPROVAL_TIMEOUT_SECONDS="1")
    mock_model.script(native(call("wipe", path="/dev/x"), call("read_file", path="r"), call("delete_file", path="d")),
                      "Some ran.")
    assert chat(hinted, "wipe", session_id="hints-1").json()["choices"][0]["message"]["content"] == "Some ran."
    wiped, read, deleted = tool_messages(mock_model.requests()[-1])
    assert "not run" in wiped  # destructiveHint: asked, and nobody answered within 1 s
    assert read == "contents of r"  # readOnlyHint wins over destructiveHint
    assert deleted == "deleted d"  # no annotations: not gated
    requested = [e["content"]["tool"] for e in events(hinted, session_id="hints-1")["events"]
                 if e["event_type"] == "approval_requested"]
    assert requested == ["wipe"]


def test_metrics_count_approvals_by_outcome(start, mock_model, approval_tools, agent, background):
    mock_model.script(native(call("delete_file", path="m")), "ok")
    answer = background.submit(chat, agent, "m", session_id="metrics-1")
    [approval] = pending(agent, session_id="metrics-1")
    decide(agent, approval["id"], "reject")
    answer.result(timeout=60)
    text = httpx.get(agent.url + "/metrics").text
    assert 'kaos_agent_approvals_total{outcome="rejected"}' in text
    assert 'kaos_agent_approval_wait_seconds_count{outcome="rejected"}' in text


def test_openai_client_plain_and_streamed(agent, mock_model, background):
    client = openai.OpenAI(base_url=agent.url + "/v1", api_key="none", timeout=60)
    mock_model.script(native(call("delete_file", path="o")), "Plain done.")
    answer = background.submit(client.chat.completions.create, model="gated",
                               messages=[{"role": "user", "content": "o"}], extra_body={"session_id": "openai-1"})
    [approval] = pending(agent, session_id="openai-1")
    decide(agent, approval["id"], "approve")
    assert answer.result(timeout=60).choices[0].message.content == "Plain done."

    mock_model.reset()
    mock_model.script(native(call("delete_file", path="s")), "Streamed done.")

    def streamed() -> list:
        stream = client.chat.completions.create(model="gated", messages=[{"role": "user", "content": "s"}],
                                                stream=True, extra_body={"session_id": "openai-2"})
        return list(stream)

    chunks = background.submit(streamed)
    [approval] = pending(agent, session_id="openai-2")
    decide(agent, approval["id"], "approve")
    text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks.result(timeout=60) if chunk.choices)
    assert text == "Streamed done."


def test_stream_announces_the_approval_once_and_keeps_alive(agent, mock_model, background):
    mock_model.script(native(call("delete_file", path="sse")), "SSE done.")
    body = {"model": "x", "stream": True, "session_id": "sse-1", "messages": [{"role": "user", "content": "sse"}]}
    lines: list[str] = []

    def read() -> None:
        with httpx.stream("POST", agent.url + "/v1/chat/completions", json=body, timeout=60) as response:
            for line in response.iter_lines():
                lines.append(line)

    done = background.submit(read)
    [approval] = pending(agent, session_id="sse-1")
    wait_until(lambda: f": approval pending {approval['id']}" in lines, 15, what="the keep-alive comment")
    decide(agent, approval["id"], "approve")
    done.result(timeout=60)
    frames = [json.loads(line[6:]) for line in lines if line.startswith("data: {")]
    announced = [frame for frame in frames if "kaos_approval" in frame]
    assert len(announced) == 1 and announced[0]["kaos_approval"]["id"] == approval["id"]
    assert announced[0]["choices"][0]["delta"] == {}
    assert "".join(f["choices"][0]["delta"].get("content", "") for f in frames if f.get("choices")) == "SSE done."
    assert lines[-1] == "data: [DONE]" or lines[-2] == "data: [DONE]"


def test_a_plain_request_keeps_alive_with_whitespace_before_its_answer(agent, mock_model, background):
    mock_model.script(native(call("delete_file", path="plain")), "Plain kept alive.")
    body = {"model": "x", "session_id": "plain-1", "messages": [{"role": "user", "content": "plain"}]}
    received: list[bytes] = []
    status: list[int] = []

    def read() -> None:
        with httpx.stream("POST", agent.url + "/v1/chat/completions", json=body, timeout=60) as response:
            status.append(response.status_code)
            for piece in response.iter_raw(1):
                received.append(piece)

    done = background.submit(read)
    [approval] = pending(agent, session_id="plain-1")
    wait_until(lambda: received, 20, what="a keep-alive byte before the decision (after KEEPALIVE_SECONDS)")
    assert status == [200] and b"".join(received).strip() == b""
    decide(agent, approval["id"], "approve")
    done.result(timeout=60)
    answer = json.loads(b"".join(received))
    assert answer["choices"][0]["message"]["content"] == "Plain kept alive."


def test_a_plain_request_without_a_wait_answers_at_once_without_whitespace(agent, mock_model):
    mock_model.script("No tools needed.")
    response = httpx.post(agent.url + "/v1/chat/completions", timeout=60,
                          json={"model": "x", "messages": [{"role": "user", "content": "hi"}]})
    assert response.status_code == 200 and response.content.startswith(b"{")


def test_decisions_need_a_key_and_never_the_requesters_when_auth_is_on(start, mock_model, approval_tools,
                                                                         background):
    secured = gated_agent(start, mock_model, approval_tools, "secured", TOOL_APPROVAL_REQUIRED="delete_file",
                          AUTH_API_KEYS="sk-requester-1,sk-approver-2")
    headers, approver = {"Authorization": "Bearer sk-requester-1"}, {"Authorization": "Bearer sk-approver-2"}
    mock_model.script(native(call("delete_file", path="k")), "Keyed.")
    answer = background.submit(chat, secured, "k", session_id="auth-1", headers=headers)
    [approval] = pending(secured, headers=headers, session_id="auth-1")
    assert approval["requester"] == "key:1"
    assert httpx.get(secured.url + "/approvals").status_code == 401
    assert decide(secured, approval["id"], "approve").status_code == 401
    assert decide(secured, approval["id"], "approve", headers={"Authorization": "Bearer wrong"}).status_code == 401
    own = decide(secured, approval["id"], "approve", headers=headers)
    assert own.status_code == 403
    assert own.json()["detail"] == ("key:1 asked for this call: with authentication on, the requester of a call "
                                    "cannot decide it; another principal must")
    decided = decide(secured, approval["id"], "approve", headers=approver)
    assert decided.status_code == 200 and decided.json()["decided_by"] == "key:2"
    assert answer.result(timeout=60).json()["choices"][0]["message"]["content"] == "Keyed."


def test_the_contract_is_in_openapi(agent):
    document = httpx.get(agent.url + "/openapi.json").json()
    assert "get" in document["paths"]["/approvals"]
    assert set(document["paths"]["/approvals/{approval_id}"]["post"]["responses"]) >= {"200", "400", "404", "409"}
    assert "403" not in document["paths"]["/approvals"]["get"]["responses"]  # open: nobody is refused


def test_bad_policy_is_refused_at_startup(start):
    from tests.support.processes import wait_for_exit

    agent = start("agent", "bad-policy", agent_env("bad-policy", TOOL_APPROVAL_ON_TIMEOUT="later"), ready=False)
    assert wait_for_exit(agent) == 2
    assert "TOOL_APPROVAL_ON_TIMEOUT must be 'reject' or 'proceed'" in agent.log()

"""Approvals across a delegation, over real processes: a call waiting in the worker shows in the
coordinator's GET /approvals as a nested entry naming the peer, deciding it there decides it in
the worker, and the coordinator's own peer timeout still ends a delegation that waits too long."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.support.polling import wait_until

from .approval_support import approvals, call, decide, gated_env, native, pending
from .conftest import agent_env, chat, events


@pytest.fixture(scope="module")
def worker(start, mock_model, approval_tools):
    return start("agent", "aworker", gated_env("aworker", mock_model, approval_tools))


def coordinator(start, mock_model, worker, name: str, **extra):
    return start("agent", name, agent_env(name, mock_model, MODEL_TOOL_CALLING="native", PEER_AGENTS="aworker",
                                          PEER_AGENT_AWORKER_CARD_URL=worker.url + "/.well-known/agent", **extra))


@pytest.fixture(autouse=True)
def clean_model(mock_model):
    mock_model.reset()


def test_a_peers_approval_is_listed_and_decided_on_the_coordinator(start, mock_model, worker):
    boss = coordinator(start, mock_model, worker, "aboss")
    mock_model.script(native(call("delegate", agent="aworker", task="delete /w/1")),
                      native(call("delete_file", path="/w/1")), "Worker deleted it.", "The worker did it.")
    with ThreadPoolExecutor(1) as pool:
        answer = pool.submit(chat, boss, "have /w/1 deleted", session_id="nested-1")
        [entry] = pending(boss)
        assert entry["peer"] == "aworker" and entry["agent"] == "aworker" and entry["tool"] == "delete_file"
        assert entry["arguments"] == {"path": "/w/1"}
        assert [a["id"] for a in approvals(worker)] == [entry["id"]]  # the peer's own id
        decided = decide(boss, entry["id"], "approve", "fine from the top")
        assert decided.status_code == 200, decided.text
        assert decided.json()["status"] == "approved" and decided.json()["peer"] == "aworker"
        assert decided.json()["decided_by"] == "anonymous via agent:aboss"
        reply = answer.result(timeout=60)
    assert reply.json()["choices"][0]["message"]["content"] == "The worker did it."
    worker_events = [e for e in events(worker, limit=500)["events"] if e["event_type"] == "tool_result"]
    assert worker_events[-1]["content"]["result"] == "deleted /w/1"
    assert decide(boss, entry["id"], "approve").status_code == 409  # decided already, in the peer
    assert decide(boss, "apr-unknown", "approve").status_code == 404


def test_the_coordinators_peer_timeout_still_applies(start, mock_model, worker):
    impatient = coordinator(start, mock_model, worker, "aimpatient", PEER_TIMEOUT_SECONDS="2")
    mock_model.script(native(call("delegate", agent="aworker", task="delete /w/2")),
                      native(call("delete_file", path="/w/2")), "The worker took too long.")
    reply = chat(impatient, "have /w/2 deleted", session_id="impatient-1")
    assert reply.json()["choices"][0]["message"]["content"] == "The worker took too long."
    failed = [e["content"] for e in events(impatient, session_id="impatient-1")["events"]
              if e["event_type"] == "delegation_error"]
    assert failed and "aworker" in failed[0]["agent"]
    # the worker's caller went away: its waiting call is withdrawn, not left pending
    expired = wait_until(lambda: [a for a in approvals(worker, status="expired") if a["arguments"] == {"path": "/w/2"}],
                         15, what="the worker's approval expired")
    assert "cancelled" in expired[0]["reason"]
    assert httpx.get(impatient.url + "/approvals").json()["approvals"] == []

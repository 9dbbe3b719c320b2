"""`kaos approvals` against real agents: `kaos up --detach` of examples/approvals/ (the agent ops,
whose delete_note waits for an approval, with scripted model replies), a chat that waits, and the
CLI listing, approving and rejecting it, with its errors for an unknown id (404) and a decided one (409)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import threading
from pathlib import Path

import httpx
import pytest
import yaml

from tests.console.conftest import ROOT, fenced
from tests.support.kaos_cli import Kaos, kaos_running
from tests.support.polling import wait_until

pytestmark = pytest.mark.timeout(400)

EXAMPLE = ROOT / "examples" / "approvals"
APPROVED_ANSWER = "The groceries note is gone."
REJECTED_ANSWER = "I kept the ideas note, as you asked."
STREAMED_ANSWER = "There was no such note to delete."
SCRIPT = [fenced("tool_call", {"tool": "delete_note", "arguments": {"name": "groceries"}}), APPROVED_ANSWER,
          fenced("tool_call", {"tool": "delete_note", "arguments": {"name": "ideas"}}), REJECTED_ANSWER,
          fenced("tool_call", {"tool": "delete_note", "arguments": {"name": "todo"}}), STREAMED_ANSWER]


def scripted(folder: Path, script: list[str]) -> Path:
    """examples/approvals/ with the agent's model replies replaced by ``script``."""
    folder.mkdir(parents=True, exist_ok=True)
    documents = [d for d in yaml.safe_load_all((EXAMPLE / "approvals.yaml").read_text()) if d]
    for document in documents:
        if document["kind"] == "Agent":
            env = document["spec"]["config"]["env"]
            [entry] = [e for e in env if e["name"] == "DEBUG_MOCK_RESPONSES"]
            entry["value"] = json.dumps(script)
    (folder / "approvals.yaml").write_text(yaml.safe_dump_all(documents, sort_keys=False))
    return folder


@pytest.fixture(scope="module")
def kaos(tmp_path_factory):
    base = tmp_path_factory.mktemp("approvals-cli")
    with kaos_running(base / "home", scripted(base / "manifests", SCRIPT)) as kaos:
        yield kaos


class Chat(threading.Thread):
    """One chat turn with ops, in the background: it waits while its tool call waits."""

    def __init__(self, kaos: Kaos, text: str):
        super().__init__(daemon=True)
        self.url = f"{kaos.url}/default/agent/ops/v1/chat/completions"
        self.text = text
        self.answer: httpx.Response | None = None
        self.start()

    def run(self) -> None:
        self.answer = httpx.post(self.url, json={"messages": [{"role": "user", "content": self.text}]}, timeout=120)

    def content(self) -> str:
        self.join(60)
        assert self.answer is not None and self.answer.status_code == 200, self.answer and self.answer.text
        return self.answer.json()["choices"][0]["message"]["content"]


def pending(kaos: Kaos) -> dict:
    """The one pending approval, once `kaos approvals list -o json` shows it."""
    def listed():
        result = kaos.kaos("approvals", "list", "-o", "json")
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)["approvals"]
    [approval] = wait_until(listed, timeout=60, interval=0.3, what="a pending approval in `kaos approvals list`")
    return approval


def events(kaos: Kaos, session: str, kind: str) -> list[dict]:
    response = httpx.get(f"{kaos.url}/default/agent/ops/memory/events",
                         params={"session_id": session, "event_type": kind, "limit": 50})
    return response.json()["events"]


def test_a_call_waits_until_approved_from_the_cli(kaos):
    assert kaos.kaos("approvals", "list").stdout.strip() == "No approvals found."
    chat = Chat(kaos, "Delete the note called groceries")
    approval = pending(kaos)
    assert (approval["tool"], approval["arguments"], approval["status"], approval["agent"]) == (
        "delete_note", {"name": "groceries"}, "pending", "ops")
    assert chat.is_alive(), "the chat waits for the decision"

    table = kaos.kaos("approvals", "list").stdout.splitlines()
    assert table[0].split()[:6] == ["ID", "AGENT", "TOOL", "ARGUMENTS", "SESSION", "STATUS"]
    row = table[1]
    assert row.split()[:4] == [approval["id"], "ops", "delete_note", '{"name":"groceries"}']
    assert re.search(r"pending\s+\d+m \d\ds$", row), row  # the time left of the 300 s timeout

    approved = kaos.kaos("approvals", "approve", approval["id"], "--reason", "done shopping")
    assert approved.returncode == 0, approved.stderr
    assert approved.stdout.strip() == (
        f"approval {approval['id']} of agent default/ops (delete_note) approved by anonymous: done shopping")
    assert chat.content() == APPROVED_ANSWER
    [result] = events(kaos, approval["session_id"], "tool_result")
    assert "deleted groceries" in json.dumps(result["content"])

    again = kaos.kaos("approvals", "reject", approval["id"])
    assert again.returncode == 1
    assert f"approval {approval['id']} of agent default/ops was already decided or has expired (HTTP 409)" in again.stderr

    everything = kaos.kaos("approvals", "list", "--all").stdout
    assert re.search(rf"{re.escape(approval['id'])}\s.*approved\s+anonymous \(done shopping\)", everything), everything


def test_a_rejection_reaches_the_model_with_its_reason(kaos):
    chat = Chat(kaos, "Delete the note called ideas")
    approval = pending(kaos)
    assert approval["arguments"] == {"name": "ideas"}
    rejected = kaos.kaos("approvals", "reject", approval["id"], "--reason", "we still need it")
    assert rejected.returncode == 0, rejected.stderr
    assert "rejected by anonymous: we still need it" in rejected.stdout
    assert chat.content() == REJECTED_ANSWER
    [event] = events(kaos, approval["session_id"], "approval_rejected")
    assert event["content"]["reason"] == "we still need it"
    assert "deleted ideas" not in json.dumps(events(kaos, approval["session_id"], "tool_result")), "it did not run"


def test_an_unknown_id_is_a_clear_error(kaos):
    searched = kaos.kaos("approvals", "approve", "no-such-id")
    assert searched.returncode == 1
    assert "error: no approval 'no-such-id' in the agents listed: see `kaos approvals list --all`" in searched.stderr
    direct = kaos.kaos("approvals", "reject", "no-such-id", "--agent", "ops")
    assert direct.returncode == 1
    assert "error: approval no-such-id of agent default/ops does not exist (HTTP 404)" in direct.stderr
    assert "Traceback" not in searched.stderr + direct.stderr


def test_a_streamed_kaos_chat_says_what_it_waits_for(kaos):
    program = shutil.which("kaos", path=kaos.env["PATH"])
    chat = subprocess.Popen([program, "chat", "ops", "--stream", "Delete the note called todo"], env=kaos.env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        approval = pending(kaos)
        assert kaos.kaos("approvals", "approve", approval["id"]).returncode == 0
        out, err = chat.communicate(timeout=60)
    finally:
        chat.kill()
    assert chat.returncode == 0, err
    assert out.strip() == STREAMED_ANSWER
    assert (f'[waiting for approval {approval["id"]}: delete_note {{"name": "todo"}}; decide with '
            f'`kaos approvals approve|reject {approval["id"]}`]') in err

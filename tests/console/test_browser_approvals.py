"""The console's approvals in Chromium against `kaos up` of examples/approvals/ (scripted model
replies): a chat that waits shows the call it waits for; the Approvals page lists it with its tool,
arguments, session and time left, and its Approve button lets the chat go on; a rejection with a
reason from the waiting chat itself reaches the turn's steps."""

from __future__ import annotations

import re

import httpx
import pytest

from tests.cli.test_approvals_cli import APPROVED_ANSWER, REJECTED_ANSWER, SCRIPT, scripted
from tests.console.conftest import eventually_true, opened_page
from tests.support.kaos_cli import kaos_running

pytestmark = pytest.mark.timeout(400)


@pytest.fixture(scope="module")
def kaos(tmp_path_factory):
    base = tmp_path_factory.mktemp("approvals-console")
    with kaos_running(base / "home", scripted(base / "manifests", SCRIPT)) as kaos:
        yield kaos


def ask(page, text: str) -> None:
    message = page.get_by_label("Message to ops")
    message.fill(text)
    message.press("Enter")


def test_approve_on_the_approvals_page_and_the_waiting_chat_goes_on(browser, kaos, screenshots):
    with opened_page(browser, kaos.url) as chat, opened_page(browser, kaos.url) as approvals:
        chat.goto("/#/agent/default/ops")
        chat.locator('[data-skill="delete_note"]').wait_for()
        ask(chat, "Delete the note called groceries")
        waiting = chat.locator("[data-approval-wait]")
        waiting.wait_for()
        text = waiting.inner_text()
        assert "Waiting for approval: delete_note" in text and '"groceries"' in text, text
        assert re.search(r"\dm \d\ds left", text), text
        assert chat.locator("[data-turn]").get_attribute("aria-busy") == "true"
        screenshots.save(chat, "approvals-1-waiting-chat")

        approvals.goto("/#/approvals")
        row = approvals.locator('tr[data-status="pending"]')
        row.wait_for()
        cells = row.locator("td, th").all_inner_texts()
        assert cells[0].startswith("ops") and cells[1] == "delete_note", cells
        assert '"name": "groceries"' in cells[2], cells
        [listed] = httpx.get(f"{kaos.url}/default/agent/ops/approvals").json()["approvals"]
        session = listed["session_id"]
        assert waiting.get_attribute("data-approval-wait") == listed["id"]
        link = row.locator("a.mono")
        assert link.inner_text() == session
        assert link.get_attribute("href") == f"#/memory/default/ops/session/{session}"
        assert re.fullmatch(r"\d+m \d\ds", cells[5]), cells
        assert "1 call waiting for a decision" in approvals.locator("#approvals-count").inner_text()
        screenshots.save(approvals, "approvals-2-page")

        row.get_by_label("Reason for delete_note of ops").fill("done shopping")
        row.get_by_role("button", name="Approve delete_note of ops").click()
        decided = approvals.locator('tr[data-status="approved"]')
        decided.wait_for()
        assert decided.locator("[data-outcome]").inner_text() == "approved by anonymous: done shopping"

        turn = chat.locator('[data-turn][data-done="true"]')
        turn.wait_for()
        assert turn.locator("[data-answer]").inner_text() == APPROVED_ANSWER
        assert waiting.get_attribute("data-settled") is not None
        turn.locator('[data-step="approval_granted"]').wait_for()
        assert "done shopping" in turn.locator('[data-step="approval_granted"]').inner_text()
        assert turn.locator('[data-step="tool_result"]').inner_text().count("deleted groceries") == 1
        assert chat.locator("[data-session]").get_attribute("data-session") == session
        screenshots.save(chat, "approvals-3-chat-approved")


def test_reject_from_the_waiting_chat_with_a_reason(browser, kaos, screenshots):
    with opened_page(browser, kaos.url) as chat:
        chat.goto("/#/agent/default/ops")
        chat.locator('[data-skill="delete_note"]').wait_for()
        ask(chat, "Delete the note called ideas")
        waiting = chat.locator("[data-approval-wait]").last
        waiting.wait_for()
        assert '"ideas"' in waiting.inner_text()
        waiting.get_by_label("Reason for delete_note of ops").fill("we still need it")
        waiting.get_by_role("button", name="Reject delete_note of ops").click()
        eventually_true(lambda: waiting.get_attribute("data-settled") == "rejected by anonymous: we still need it",
                        what="the notice says the call was rejected")
        turn = chat.locator('[data-turn][data-done="true"]').last
        turn.wait_for()
        assert turn.locator("[data-answer]").inner_text() == REJECTED_ANSWER
        rejected = turn.locator('[data-step="approval_rejected"]')
        rejected.wait_for()
        assert "we still need it" in rejected.inner_text()
        screenshots.save(chat, "approvals-4-chat-rejected")

        chat.goto("/#/approvals")
        chat.get_by_label("Show decided and expired calls too").check()
        eventually_true(lambda: chat.locator('tr[data-status="rejected"]').count() == 1
                        and chat.locator('tr[data-status="approved"]').count() == 1,
                        what="both decided calls listed")
        assert chat.locator('tr[data-status="pending"]').count() == 0

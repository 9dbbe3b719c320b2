"""What people signed in to the console see and may do (issue 29), shared by the tier of `kaos
up` (tests/console/test_browser_signin.py, Hydra as a process) and the real-cluster tier
(tests/realcluster/test_console_signin.py, Hydra's pod and the platform chart's console).

The resources: examples/approvals/ with the agent ops behind the issuer and spec.access, its
model replies scripted, and greeter, an agent without authentication that may delegate to ops.
The scenario, in one
browser context per person: bob and carol each see only their own session; dave, an admin
outside the approvers group, sees carol's waiting call but is refused ("not allowed:
approver"); alice, an approver, approves it and carol's chat goes on; the Audit page names dave's
refusal and alice's decision to an admin, and tells bob he lacks 'admin'; Sign out leaves the
tab signed out, through the issuer's end_session_endpoint."""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import yaml

from tests.cli.test_approvals_cli import scripted
from tests.console.conftest import eventually_true, fenced, opened_page

AUDIENCE = "kaos-console-agents"
PEOPLE = {"alice": ["engineering", "approvers"], "bob": ["engineering"], "carol": ["sales"],
          "dave": ["auditors", "engineering"], "erin": ["marketing"]}
BOB_ANSWER = "Hello bob: your notes are groceries and ideas."
CAROL_ANSWER = "Hello carol: you have two notes."
DONE_ANSWER = "Done: the note groceries is deleted as decided."
SCRIPT = [BOB_ANSWER, CAROL_ANSWER, fenced("tool_call", {"tool": "delete_note", "arguments": {"name": "groceries"}}), DONE_ANSWER]
SIGNIN_STORAGE = "kaos-console-signin"

OPEN_AGENT = {"apiVersion": "kaos.tools/v1alpha1", "kind": "Agent", "metadata": {"name": "greeter"},
              "spec": {"modelAPI": "notes-llm", "model": "mock-model", "agentNetwork": {"access": ["ops"]},
                       "config": {"description": "Greets whoever calls: no spec.auth, open to everyone; "
                                                 "may delegate to ops"}}}


def guarded(folder: Path, issuer: str, audience: str = AUDIENCE) -> Path:
    """``folder`` holding the scripted approvals example with the agent ops behind ``issuer`` and
    spec.access, and greeter, an agent without authentication that may delegate to ops (no
    namespace: apply it anywhere)."""
    path = scripted(folder, SCRIPT) / "approvals.yaml"
    documents = list(yaml.safe_load_all(path.read_text()))
    for document in documents:
        if document["kind"] == "Agent":
            spec = document["spec"]
            spec["auth"] = {"oidc": {"issuer": issuer, "audience": audience},
                            "admins": ["group:approvers", "group:auditors"]}
            spec["access"] = [{"verbs": ["chat", "read"], "groups": ["engineering", "sales"]},
                              {"verbs": ["approve"], "groups": ["engineering"]}]
            spec["approval"]["approvers"] = ["group:approvers"]
    documents.append(OPEN_AGENT)
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False))
    return folder


@contextmanager
def signed_in(browser, console_url: str, user: str, start: str):
    """A page of ``user`` on the console at ``console_url``, signed in through the issuer's login
    form from ``start`` (a path of the console); the issuer's authorization requests it sent."""
    with opened_page(browser, console_url) as page:
        asked: list[str] = []
        page.on("request", lambda request: asked.append(request.url) if "/oauth2/auth?" in request.url else None)
        page.goto(start)
        page.get_by_role("button", name="Sign in").click()
        page.get_by_label("User name").fill(user)
        page.get_by_role("button", name="Log in").click()
        page.locator("#person-name").wait_for()
        yield page, asked


def session_options(page) -> list[str]:
    options = page.locator("#memory-session option")
    eventually_true(lambda: options.count() > 1, timeout=30, what="a session in the memory page")
    return options.all_inner_texts()[1:]


def chat(page, text: str, agent: str = "ops") -> None:
    message = page.get_by_label(f"Message to {agent}")
    message.fill(text)
    message.press("Enter")


def people_sign_in_and_see_what_the_agent_lets_them(browser, console_url: str, namespace: str, screenshots,
                                                    audience: str = AUDIENCE) -> None:
    """The scenario of this module's docstring against the console at ``console_url``, the
    resources of ``guarded`` applied in ``namespace``."""
    ops = f"/#/agent/{namespace}/ops"
    memory = f"/#/memory/{namespace}/ops"
    with opened_page(browser, console_url) as anonymous:
        anonymous.goto("/#/approvals")
        anonymous.get_by_role("heading", name="Sign in to the KAOS console").wait_for()
        assert anonymous.locator("#token-form").is_hidden(), "a signed-in console asks for no pasted token"
        screenshots.save(anonymous, "signin-1-page")

    with signed_in(browser, console_url, "bob", ops) as (bob, asked):
        authorize = asked[0]  # then Hydra's own returns to /oauth2/auth with its verifiers
        query = {name: values[0] for name, values in parse_qs(urlsplit(authorize).query).items()}
        assert query["code_challenge_method"] == "S256" and len(query["code_challenge"]) == 43, query
        assert query["state"] and query["nonce"] and query["audience"] == audience, query
        assert "code_verifier" not in authorize
        assert urlsplit(bob.url).query == "" and bob.url.endswith(ops.lstrip("/")), bob.url
        assert bob.locator("#person-name").inner_text() == "bob"
        assert bob.locator("#person-groups").inner_text() == "(engineering)"
        own = [c["name"] for c in bob.context.cookies(console_url) if not c["name"].startswith("ory_hydra_")]
        assert own == [], "the console keeps the tokens in the tab, not in a cookie (Hydra's may share the host)"
        stored = json.loads(bob.evaluate(f"sessionStorage.getItem('{SIGNIN_STORAGE}')"))
        assert stored["user"] == {"subject": "bob", "name": "bob", "groups": ["engineering"]}
        screenshots.save(bob, "signin-2-bob")
        bob.locator('[data-skill="delete_note"]').wait_for()
        chat(bob, "Which notes do I have?")
        bob.locator("[data-answer]", has_text=BOB_ANSWER).wait_for()

        with signed_in(browser, console_url, "carol", ops) as (carol, _):
            assert carol.locator("#person-groups").inner_text() == "(sales)"
            carol.locator('[data-skill="delete_note"]').wait_for()
            chat(carol, "Hello")
            carol.locator("[data-answer]", has_text=CAROL_ANSWER).wait_for()

            bob.goto(memory)
            carol.goto(memory)
            [bob_session], [carol_session] = session_options(bob), session_options(carol)
            assert bob_session != carol_session, "each sees only its own session"
            assert carol.locator('[data-event-type="agent_response"]').all_inner_texts() != []
            assert BOB_ANSWER not in carol.locator("main").inner_text()
            screenshots.save(carol, "signin-3-carol-memory")

            carol.goto(ops)  # the chat stays open in this tab while its call waits
            carol.locator('[data-skill="delete_note"]').wait_for()
            chat(carol, "Delete the note called groceries")
            carol.locator("[data-approval-wait]").wait_for()

            with signed_in(browser, console_url, "dave", "/#/approvals") as (dave, _):
                row = dave.locator('tr[data-status="pending"]')
                row.wait_for()
                row.get_by_role("button", name="Approve").first.click()
                refusal = row.locator("p.denied")
                eventually_true(lambda: "not allowed: approver" in refusal.inner_text(), what="dave's refusal")
                screenshots.save(dave, "signin-4-dave-refused")

            bob.goto("/#/approvals")
            eventually_true(lambda: "0 calls waiting" in bob.locator("#approvals-count").inner_text(),
                            what="bob's approvals page asked the agent")
            assert bob.locator('tr[data-status="pending"]').count() == 0, "bob may not decide carol's call"

            with signed_in(browser, console_url, "alice", "/#/approvals") as (alice, _):
                row = alice.locator('tr[data-status="pending"]')
                row.wait_for()
                assert row.locator("a.mono").inner_text() not in ("", bob_session)
                row.get_by_role("button", name="Approve").first.click()
                alice.locator('[data-outcome="approved"]').wait_for()
                assert "approved by user:alice" in alice.locator('[data-outcome="approved"]').inner_text()
                carol.locator("[data-answer]", has_text=DONE_ANSWER).wait_for()

                alice.goto("/#/audit")
                alice.locator('tr[data-action="approval.approved"]').wait_for()
                assert alice.locator('tr[data-action="approval.approved"] td.mono').first.inner_text() == "user:alice"
                assert alice.locator('tr[data-action="approval.refused"] td.mono').first.inner_text() == "user:dave"
                screenshots.save(alice, "signin-5-audit")

            bob.goto("/#/audit")
            denied = bob.locator("li.denied")
            denied.first.wait_for()
            assert denied.first.get_attribute("data-denied") == "'admin'", denied.first.inner_text()
            assert "not allowed: 'admin'" in denied.first.inner_text()

        ended: list[str] = []
        bob.on("request", lambda request: ended.append(request.url) if "/oauth2/sessions/logout?" in request.url else None)
        bob.get_by_role("button", name="Sign out").click()
        bob.get_by_role("heading", name="Sign in to the KAOS console").wait_for()
        assert bob.evaluate(f"sessionStorage.getItem('{SIGNIN_STORAGE}')") is None
        assert ended and "id_token_hint=" in ended[0], "Sign out ends the session at the issuer too"

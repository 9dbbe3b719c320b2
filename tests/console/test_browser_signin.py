"""People sign in to the console (issue 29, items 5 and 6) in Chromium, against `kaos up` of
examples/approvals/ whose agent takes OpenID Connect tokens of a real issuer (Ory Hydra as a
process on 127.0.0.1, tests/support/hydra.py, with its test login app for a browser).

The console is started with KAOS_CONSOLE_OIDC_* naming the issuer and a public client. Each
person goes through the authorization-code flow with PKCE (S256) in their own browser context:
the console's Sign in, Hydra's /oauth2/auth, the login form, back on the console. The agent's
spec.access then decides: bob and carol each see only their own session; dave, an admin outside
the approvers group, sees carol's waiting call but is refused ("not allowed: approver"); alice,
an approver, approves it and carol's chat goes on; the Audit page names dave's refusal and
alice's decision to an admin, and tells bob he lacks 'admin'. The overview shows each person the
agents that let them chat (each agent's GET /access/me): bob sees ops and greeter, an agent
without authentication; erin, whose group ops grants nothing, sees only greeter."""

from __future__ import annotations

import json
from contextlib import contextmanager
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml

from kaos.settings import variable
from tests.cli.test_approvals_cli import scripted
from tests.console.conftest import eventually_true, fenced, opened_page
from tests.support.hydra import running_hydra
from tests.support.kaos_cli import kaos_running

pytestmark = pytest.mark.timeout(400)

AUDIENCE = "kaos-console-agents"
PEOPLE = {"alice": ["engineering", "approvers"], "bob": ["engineering"], "carol": ["sales"],
          "dave": ["auditors", "engineering"], "erin": ["marketing"]}
BOB_ANSWER = "Hello bob: your notes are groceries and ideas."
CAROL_ANSWER = "Hello carol: you have two notes."
DONE_ANSWER = "Done: the note groceries is deleted as decided."
SCRIPT = [BOB_ANSWER, CAROL_ANSWER, fenced("tool_call", {"tool": "delete_note", "arguments": {"name": "groceries"}}), DONE_ANSWER]

OPEN_AGENT = {"apiVersion": "kaos.tools/v1alpha1", "kind": "Agent", "metadata": {"name": "greeter"},
              "spec": {"modelAPI": "notes-llm", "model": "mock-model",
                       "config": {"description": "Greets whoever calls: no spec.auth, open to everyone"}}}


def guarded(folder, issuer: str):
    """The scripted approvals example with the agent ops behind the issuer and spec.access, and
    greeter, an agent without authentication."""
    path = scripted(folder, SCRIPT) / "approvals.yaml"
    documents = list(yaml.safe_load_all(path.read_text()))
    for document in documents:
        if document["kind"] == "Agent":
            spec = document["spec"]
            spec["auth"] = {"oidc": {"issuer": issuer, "audience": AUDIENCE},
                            "admins": ["group:approvers", "group:auditors"]}
            spec["access"] = [{"verbs": ["chat", "read"], "groups": ["engineering", "sales"]},
                              {"verbs": ["approve"], "groups": ["engineering"]}]
            spec["approval"]["approvers"] = ["group:approvers"]
    documents.append(OPEN_AGENT)
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False))
    return folder


@pytest.fixture(scope="module")
def signed_kaos(tmp_path_factory):
    base = tmp_path_factory.mktemp("signin-console")
    with running_hydra(base, browser_users=PEOPLE) as hydra:
        client_id = hydra.public_client("http://127.0.0.1:9/", [AUDIENCE])
        with pytest.MonkeyPatch.context() as patch:  # kaos up's environment (Kaos copies os.environ)
            patch.setenv(variable("console_oidc_issuer"), hydra.issuer)
            patch.setenv(variable("console_oidc_client_id"), client_id)
            patch.setenv(variable("console_oidc_audience"), AUDIENCE)
            with kaos_running(base / "home", guarded(base / "manifests", hydra.issuer)) as kaos:
                hydra.allow_redirect(client_id, kaos.url + "/")
                yield kaos, hydra


@contextmanager
def signed_in(browser, kaos, user: str, start: str = "/#/memory/default/ops"):
    """A page of ``user``, signed in through Hydra; the issuer's authorization requests it sent."""
    with opened_page(browser, kaos.url) as page:
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


def chat(page, text: str) -> None:
    message = page.get_by_label("Message to ops")
    message.fill(text)
    message.press("Enter")


def test_people_sign_in_and_see_what_the_agent_lets_them(browser, signed_kaos, screenshots):
    kaos, hydra = signed_kaos
    with opened_page(browser, kaos.url) as anonymous:
        anonymous.goto("/#/approvals")
        anonymous.get_by_role("heading", name="Sign in to the KAOS console").wait_for()
        assert anonymous.locator("#token-form").is_hidden(), "a signed-in console asks for no pasted token"
        screenshots.save(anonymous, "signin-1-page")

    with signed_in(browser, kaos, "bob", "/#/agent/default/ops") as (bob, asked):
        authorize = asked[0]  # then Hydra's own returns to /oauth2/auth with its verifiers
        query = {name: values[0] for name, values in parse_qs(urlsplit(authorize).query).items()}
        assert query["code_challenge_method"] == "S256" and len(query["code_challenge"]) == 43, query
        assert query["state"] and query["nonce"] and query["audience"] == AUDIENCE, query
        assert "code_verifier" not in authorize
        assert urlsplit(bob.url).query == "" and bob.url.endswith("#/agent/default/ops"), bob.url
        assert bob.locator("#person-name").inner_text() == "bob"
        assert bob.locator("#person-groups").inner_text() == "(engineering)"
        own = [c["name"] for c in bob.context.cookies(kaos.url) if not c["name"].startswith("ory_hydra_")]
        assert own == [], "the console keeps the tokens in the tab, not in a cookie (Hydra's share 127.0.0.1)"
        stored = json.loads(bob.evaluate("sessionStorage.getItem('kaos-console-signin')"))
        assert stored["user"] == {"subject": "bob", "name": "bob", "groups": ["engineering"]}
        screenshots.save(bob, "signin-2-bob")
        bob.locator('[data-skill="delete_note"]').wait_for()
        chat(bob, "Which notes do I have?")
        bob.locator("[data-answer]", has_text=BOB_ANSWER).wait_for()

        with signed_in(browser, kaos, "carol", "/#/agent/default/ops") as (carol, _):
            assert carol.locator("#person-groups").inner_text() == "(sales)"
            carol.locator('[data-skill="delete_note"]').wait_for()
            chat(carol, "Hello")
            carol.locator("[data-answer]", has_text=CAROL_ANSWER).wait_for()

            bob.goto("/#/memory/default/ops")
            carol.goto("/#/memory/default/ops")
            [bob_session], [carol_session] = session_options(bob), session_options(carol)
            assert bob_session != carol_session, "each sees only its own session"
            assert carol.locator('[data-event-type="agent_response"]').all_inner_texts() != []
            assert BOB_ANSWER not in carol.locator("main").inner_text()
            screenshots.save(carol, "signin-3-carol-memory")

            carol.goto("/#/agent/default/ops")  # the chat stays open in this tab while its call waits
            carol.locator('[data-skill="delete_note"]').wait_for()
            chat(carol, "Delete the note called groceries")
            carol.locator("[data-approval-wait]").wait_for()

            with signed_in(browser, kaos, "dave", "/#/approvals") as (dave, _):
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

            with signed_in(browser, kaos, "alice", "/#/approvals") as (alice, _):
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
            denied.wait_for()
            assert denied.get_attribute("data-denied") == "'admin'", denied.inner_text()
            assert "not allowed: 'admin'" in denied.inner_text()

        bob.get_by_role("button", name="Sign out").click()
        bob.get_by_role("heading", name="Sign in to the KAOS console").wait_for()
        assert bob.evaluate("sessionStorage.getItem('kaos-console-signin')") is None


def test_a_person_without_grants_is_told_which_one_is_missing(browser, signed_kaos, screenshots):
    """erin's group has no rule of the agent's spec.access: her chat and the agent's memory say
    what she lacks, as a refusal, not as a failure of the page."""
    kaos, _ = signed_kaos
    with signed_in(browser, kaos, "erin", "/#/agent/default/ops") as (erin, _):
        erin.locator('[data-skill="delete_note"]').wait_for()
        chat(erin, "Hello")
        refusal = erin.locator("p.denied")
        refusal.wait_for()
        assert "not allowed: 'chat'" in refusal.inner_text(), refusal.inner_text()
        erin.goto("/#/memory/default/ops")
        eventually_true(lambda: "not allowed: 'read'" in erin.locator("p.denied").inner_text(), what="erin's memory refusal")
        screenshots.save(erin, "signin-6-erin-refused")


def agents_shown(page) -> list[str]:
    return sorted(page.locator('tr[data-resource^="Agent/"]').evaluate_all("rows => rows.map(r => r.dataset.resource)"))


def test_each_person_sees_only_the_agents_they_may_call(browser, signed_kaos, screenshots):
    """The overview asks each agent what the person may do there, with their token: bob (group
    engineering, granted chat) sees ops; erin (marketing, no grant) does not, and is told why;
    both see greeter, which has no authentication."""
    kaos, _ = signed_kaos
    with signed_in(browser, kaos, "bob", "/#/") as (bob, _):
        bob.locator('tr[data-resource="Agent/default/ops"][data-access="chat"]').wait_for()
        bob.locator('tr[data-resource="Agent/default/greeter"][data-access="chat"]').wait_for()
        assert agents_shown(bob) == ["Agent/default/greeter", "Agent/default/ops"]
        assert bob.locator("#agents-hidden").get_attribute("data-hidden") == "0"
        with signed_in(browser, kaos, "erin", "/#/") as (erin, _):
            erin.locator('tr[data-resource="Agent/default/greeter"][data-access="chat"]').wait_for()
            hidden = erin.locator("#agents-hidden")
            eventually_true(lambda: hidden.get_attribute("data-hidden") == "1", what="ops hidden from erin")
            assert agents_shown(erin) == ["Agent/default/greeter"]
            assert "not allowed: 'chat'" in hidden.inner_text()
            assert erin.locator('tr[data-resource="MCPServer/default/notes"]').count() == 1  # other kinds stay
            screenshots.save(erin, "signin-7-erin-overview")


def test_an_agent_that_does_not_say_is_shown_as_unknown(browser, signed_kaos):
    """greeter's answer never arrives (the browser's request to it fails, as to an agent that
    cannot be reached): it is shown, marked 'access unknown', not hidden."""
    kaos, _ = signed_kaos
    with signed_in(browser, kaos, "bob", "/#/audit") as (bob, _):
        bob.route("**/default/agent/greeter/access/me", lambda route: route.abort("connectionrefused"))
        bob.goto("/#/")
        row = bob.locator('tr[data-resource="Agent/default/greeter"][data-access="unknown"]')
        row.wait_for()
        assert "Access unknown" in row.locator('[data-access-note="unknown"]').inner_text()
        bob.locator('tr[data-resource="Agent/default/ops"][data-access="chat"]').wait_for()


def test_an_answer_for_another_sign_in_is_refused(browser, signed_kaos):
    kaos, _ = signed_kaos
    with opened_page(browser, kaos.url) as page:
        page.goto("/?code=stolen-code&state=forged-state")
        page.get_by_text("does not belong to a sign-in started in this tab").wait_for()
        assert urlsplit(page.url).query == "", "the code leaves the address bar"

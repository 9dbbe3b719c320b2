"""People sign in to the console (issue 29, items 5 and 6) in Chromium, against `kaos up` of
examples/approvals/ whose agent takes OpenID Connect tokens of a real issuer (Ory Hydra as a
process on 127.0.0.1, tests/support/hydra.py, with its test login app for a browser).

The console is started with KAOS_CONSOLE_OIDC_* naming the issuer and a public client. Each
person goes through the authorization-code flow with PKCE (S256) in their own browser context:
the console's Sign in, Hydra's /oauth2/auth, the login form, back on the console. The agent's
spec.access then decides: bob and carol each see only their own session; dave, an admin outside
the approvers group, sees carol's waiting call but is refused ("not allowed: approver"); alice,
an approver, approves it and carol's chat goes on; the Audit page names dave's refusal and
alice's decision to an admin, and tells bob he lacks 'admin' (tests/console/signin_scenario.py,
which the real-cluster tier runs too: tests/realcluster/test_console_signin.py). The overview shows each person the
agents that let them chat (each agent's GET /access/me): bob sees ops and greeter, an agent
without authentication; erin, whose group ops grants nothing, sees only greeter."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import pytest

from kaos.settings import variable
from tests.console import signin_scenario as scenario
from tests.console.conftest import eventually_true, opened_page
from tests.console.signin_scenario import AUDIENCE, PEOPLE, SIGNIN_STORAGE, chat, guarded
from tests.support.hydra import running_hydra
from tests.support.kaos_cli import kaos_running

pytestmark = pytest.mark.timeout(400)


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


def signed_in(browser, kaos, user: str, start: str = "/#/memory/default/ops"):
    return scenario.signed_in(browser, kaos.url, user, start)


def test_people_sign_in_and_see_what_the_agent_lets_them(browser, signed_kaos, screenshots):
    kaos, _ = signed_kaos
    scenario.people_sign_in_and_see_what_the_agent_lets_them(browser, kaos.url, "default", screenshots)


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
        # ops is not offered to her, but the page's address names it: it is chosen, and not "not found"
        eventually_true(lambda: "default/greeter" in agent_choices(erin), what="the agent picker")
        assert erin.locator("#memory-agent option:checked").inner_text() == "default/ops"
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


def agent_nodes(page) -> list[str]:
    return sorted(page.locator('[data-node^="Agent/"]').evaluate_all("nodes => nodes.map(n => n.dataset.node)"))


def agent_choices(page) -> list[str]:
    return sorted(page.locator("#memory-agent option").evaluate_all("options => options.map(o => o.value).filter(Boolean)"))


def test_the_graph_and_the_agent_pickers_show_the_same_agents_as_the_overview(browser, signed_kaos, screenshots):
    """Every page that lists agents goes through the overview's filter (access.js, shownTo): once
    ops told erin she may not chat there, the network graph and the memory page's agent picker
    leave it out as the overview does, and keep greeter and the other kinds; bob sees both agents."""
    kaos, _ = signed_kaos
    with signed_in(browser, kaos, "erin", "/#/") as (erin, _):
        eventually_true(lambda: erin.locator("#agents-hidden").get_attribute("data-hidden") == "1", what="ops's answer to erin")
        erin.locator('[data-nav="graph"]').click()  # the same tab: the answers it has
        erin.locator('[data-node="Agent/default/greeter"]').wait_for()
        assert agent_nodes(erin) == ["Agent/default/greeter"]
        assert erin.locator('[data-node="MCPServer/default/notes"]').count() == 1
        screenshots.save(erin, "signin-8-erin-graph")
        erin.locator('[data-nav="memory"]').click()
        eventually_true(lambda: agent_choices(erin) != [], what="the memory page's agent picker")
        assert agent_choices(erin) == ["default/greeter"]
    with signed_in(browser, kaos, "bob", "/#/graph") as (bob, _):
        eventually_true(lambda: agent_nodes(bob) == ["Agent/default/greeter", "Agent/default/ops"], what="bob's graph")
        bob.locator('[data-nav="memory"]').click()
        eventually_true(lambda: agent_choices(bob) == ["default/greeter", "default/ops"], what="bob's agent picker")


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


def test_signing_out_ends_the_session_at_the_issuer_too(browser, signed_kaos):
    """bob signs in with the issuer's "Remember me": another tab is signed in by the issuer without
    a form. Sign out sends the tab to the issuer's end_session_endpoint (the discovery document's)
    with the ID token as id_token_hint and the console as post_logout_redirect_uri, and the issuer
    sends it back: the next Sign in asks for a name again, in every tab."""
    kaos, hydra = signed_kaos
    with opened_page(browser, kaos.url) as bob:
        bob.goto("/#/approvals")
        bob.get_by_role("button", name="Sign in").click()
        bob.get_by_label("User name").fill("bob")
        bob.get_by_label("Remember me").check()
        bob.get_by_role("button", name="Log in").click()
        bob.locator("#person-name").wait_for()
        id_token = json.loads(bob.evaluate(f"sessionStorage.getItem('{SIGNIN_STORAGE}')"))["id_token"]

        other = bob.context.new_page()  # a tab of its own: no tokens, but the issuer's cookie
        other.goto("/#/approvals")
        other.get_by_role("button", name="Sign in").click()
        other.locator("#person-name").wait_for()  # no form: the issuer remembered bob
        assert other.locator("#person-name").inner_text() == "bob"
        other.close()

        ended: list[str] = []
        bob.on("request", lambda request: ended.append(request.url) if "/oauth2/sessions/logout?" in request.url else None)
        bob.get_by_role("button", name="Sign out").click()
        bob.get_by_role("heading", name="Sign in to the KAOS console").wait_for()
        assert ended, "the tab went to the issuer's end_session_endpoint"
        query = {name: values[0] for name, values in parse_qs(urlsplit(ended[0]).query).items()}
        assert ended[0].startswith(hydra.issuer + "/oauth2/sessions/logout?"), ended[0]
        assert query["id_token_hint"] == id_token and query["post_logout_redirect_uri"] == kaos.url + "/", query
        assert bob.url.startswith(kaos.url + "/"), bob.url
        assert bob.evaluate(f"sessionStorage.getItem('{SIGNIN_STORAGE}')") is None
        bob.get_by_role("button", name="Sign in").click()
        bob.get_by_label("User name").wait_for()  # the issuer asks again: its session of bob ended


def test_an_answer_for_another_sign_in_is_refused(browser, signed_kaos):
    kaos, _ = signed_kaos
    with opened_page(browser, kaos.url) as page:
        page.goto("/?code=stolen-code&state=forged-state")
        page.get_by_text("does not belong to a sign-in started in this tab").wait_for()
        assert urlsplit(page.url).query == "", "the code leaves the address bar"

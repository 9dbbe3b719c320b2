"""spec.access in the runtime (core/grants.py, principal.Access): ACCESS_RULES parsed with messages
that name the rule and field, the verb each route needs, and who holds which grant (users,
groups of a user this agent authenticated, principals, admins)."""

import re

import pytest

from kaos_runtime.core.grants import held, rules, verbs_of
from kaos_runtime.core.principal import Access, Principal
from kaos_runtime.core.settings import AgentSettings

RULES = ('[{"verbs": ["chat"], "groups": ["eng"]}, {"verbs": ["approve"], "users": ["al ice"]},'
         ' {"verbs": ["read"], "principals": ["key:1"]}, {"verbs": ["admin"], "groups": ["ops"]}]')
ACCESS = Access(enabled=True, rules=rules(RULES))
BOB = Principal("user:bob", "user", (), frozenset({"group:eng"}))


@pytest.mark.parametrize("value, message", [
    ("nope", "ACCESS_RULES is not JSON"),
    ('{"verbs": []}', "ACCESS_RULES must be a JSON list of rules"),
    ('[{"verbs": ["delete"], "users": ["a"]}]', "ACCESS_RULES[0].verbs: 'delete' is not a verb (chat, read, approve, admin)"),
    ('[{"verbs": [], "users": ["a"]}]', "ACCESS_RULES[0].verbs is empty"),
    ('[{"verbs": ["chat"]}]', "ACCESS_RULES[0] grants to no one"),
    ('[{"verbs": ["chat"], "user": ["a"]}]', "ACCESS_RULES[0]: unknown field 'user'"),
    ('[{"verbs": ["chat"], "principals": ["bob"]}]', "ACCESS_RULES[0].principals: 'bob' is not a principal"),
])
def test_a_wrong_rule_is_named(value, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        rules(value)
    with pytest.raises(ValueError, match="ACCESS_RULES"):
        AgentSettings.from_env({"ACCESS_RULES": value, "AUTH_API_KEYS": "k"})


def test_rules_need_authentication():
    with pytest.raises(ValueError, match="ACCESS_RULES names principals, but authentication is off"):
        AgentSettings.from_env({"ACCESS_RULES": RULES})


def test_the_verb_of_each_route():
    assert verbs_of("POST", "/v1/chat/completions") == ("chat",)
    assert verbs_of("POST", "/a2a") == verbs_of("POST", "/mcp") == ("chat",)
    assert verbs_of("GET", "/memory/events") == ("read",)
    assert verbs_of("GET", "/approvals") == ("read", "approve")
    assert verbs_of("POST", "/approvals/abc") == ("approve",)
    assert verbs_of("GET", "/audit") == ("admin",)
    assert verbs_of("GET", "/v1/models") == ()


def test_who_holds_which_grant():
    assert ACCESS.granted(BOB, "chat") and not ACCESS.granted(BOB, "read")
    assert ACCESS.granted(Principal("user:al%20ice", "user"), "approve")  # a user's name as element() writes it
    assert ACCESS.granted(Principal("key:1", "key"), "read") and not ACCESS.granted(Principal("key:1", "key"), "chat")
    # A relayed user's groups (those a verified on-behalf-of assertion carried) count as a direct user's.
    assert ACCESS.granted(Principal("user:bob", "user", ("key:1",), frozenset({"group:eng"})), "chat")
    assert not ACCESS.granted(Principal("user:bob", "user", ("key:1",)), "chat")
    admin = Principal("user:root", "user", (), frozenset({"group:ops"}))
    assert ACCESS.is_admin(admin) and all(ACCESS.granted(admin, verb) for verb in ("chat", "read", "approve"))
    assert ACCESS.grant_refusal(BOB, ("read", "approve"), "ops") == (
        "user:bob may not read or approve on agent ops: no rule of its spec.access grants 'read' or 'approve' "
        "to this user, one of its groups or this principal")
    assert Access(enabled=True).granted(BOB, "admin")  # no spec.access: no verb needs a grant
    assert "no rule of the agent's spec.access grants 'approve'" in ACCESS.may_decide(BOB, "user:carol")


def test_the_verbs_a_caller_holds_are_those_the_checks_grant():
    """grants.held (GET /access/me): the grants, and for 'approve' the approver rules too."""
    assert held(ACCESS, BOB) == ("chat",)
    assert held(ACCESS, Principal("key:1", "key")) == ("read",)
    assert held(ACCESS, Principal("user:root", "user", (), frozenset({"group:ops"}))) == ("chat", "read", "approve", "admin")
    al_ice = Principal("user:al%20ice", "user")
    assert held(ACCESS, al_ice) == ("approve",)
    approvers_elsewhere = Access(enabled=True, approvers=("group:approvers",), rules=ACCESS.rules)
    assert held(approvers_elsewhere, al_ice) == ()  # granted 'approve', yet not one of the approvers
    assert held(Access(enabled=True), BOB) == ("chat", "read", "approve")  # no spec.access; not an admin
    assert held(Access(), Principal()) == ("chat", "read", "approve", "admin")  # an open agent

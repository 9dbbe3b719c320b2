"""spec.access and spec.auth.oidc's claims, from an Agent through the reconcile core and the agent
chart to the runtime's settings (ACCESS_RULES, AUTH_OIDC_USER_CLAIM, AUTH_OIDC_GROUPS_CLAIM), and
the mistakes the CRD and the reconcile core refuse with a message naming the field."""

import json

import pytest

from kaos import crds
from kaos.api import API_VERSION
from kaos.crds import ValidationError
from kaos.reconcile import plan
from kaos.settings import Settings
from kaos_runtime.core.settings import AgentSettings
from tests.charts.rendering import container, env_of, render
from tests.reconcile.builders import agent, endpoint_of, modelapi
from tests.reconcile.test_plan import observed_of

OIDC = {"issuer": "https://id.example", "audience": "kaos", "userClaim": "email", "groupsClaim": "roles"}
RULES = [{"verbs": ["chat", "read"], "groups": ["engineering"]}, {"verbs": ["admin"], "users": ["ops@example.com"]},
         {"verbs": ["chat"], "principals": ["key:1"]}]


def with_access(rules, auth=None, approvers=None):
    resource = agent(auth=auth if auth is not None else {"oidc": OIDC})
    resource["spec"]["access"] = rules
    if approvers is not None:
        resource["spec"]["approval"] = {"tools": ["*"], "approvers": approvers}
    return resource


def validate(resource):
    resource = {**resource, "apiVersion": API_VERSION}
    resource.pop("status")
    return crds.validate(resource)


def planned(resource):
    return plan(resource, observed_of(modelapi()), Settings(), endpoint_of)


def test_access_and_claims_reach_the_runtime():
    result = planned(with_access(RULES))
    assert result.phase == "Deploy", result.message
    env = env_of(container(render("agent", result.values)))
    assert json.loads(env["ACCESS_RULES"]) == RULES
    assert env["AUTH_OIDC_USER_CLAIM"] == "email" and env["AUTH_OIDC_GROUPS_CLAIM"] == "roles"
    assert env["AUTH_OIDC_ISSUER"] == "https://id.example" and env["AUTH_OIDC_AUDIENCE"] == "kaos"
    assert "AUTH_OIDC_JWKS_URL" not in env  # discovered from the issuer
    settings = AgentSettings.from_env({name: value for name, value in env.items() if isinstance(value, str)})
    assert settings.auth.oidc_user_claim == "email" and settings.auth.access_rules == env["ACCESS_RULES"]
    assert "ACCESS_RULES" not in env_of(container(render("agent", planned(agent()).values)))


def test_the_crd_refuses_an_unknown_verb_and_an_oidc_without_audience():
    resource = with_access([{"verbs": ["delete"], "users": ["a"]}])
    with pytest.raises(ValidationError, match=r"spec.access\[0\].verbs\[0\].*'delete'"):
        validate(resource)
    with pytest.raises(ValidationError, match="audience"):
        validate(agent(auth={"oidc": {"issuer": "https://id.example"}}))
    defaulted = validate(agent(auth={"oidc": {"issuer": "https://id.example", "audience": "kaos"}}))
    assert defaulted["spec"]["auth"]["oidc"]["userClaim"] == "sub"
    assert validate(with_access(RULES, approvers=["group:approvers"]))["spec"]["access"] == RULES


def test_the_crds_rule_on_each_access_entry_is_checked_without_an_api_server():
    """The CEL rule sits on spec.access's items: `kaos up` checks it through its Python twin."""
    with pytest.raises(ValidationError, match=r"spec.access\[1\]: an access rule grants to no one"):
        validate(with_access([RULES[0], {"verbs": ["chat"], "users": []}]))


@pytest.mark.parametrize("rules, auth, approvers, message", [
    ([{"verbs": ["chat"]}], None, None, "spec.access[0] grants to no one: list users, groups or principals"),
    ([{"verbs": ["chat"], "users": ["x"]}], {"apiKeys": {"secretKeyRef": {"name": "k", "key": "k"}}}, None,
     "spec.access[0].users names users, whom only this Agent's own OIDC issuer signs in"),
    ([{"verbs": ["chat"], "groups": ["x"]}], {}, None, "spec.access names principals, but this Agent has no "
                                                       "authentication"),
    ([], {"apiKeys": {"secretKeyRef": {"name": "k", "key": "k"}}}, ["user:alice"],
     "'user:alice' names an OIDC user, but this Agent has no spec.auth.oidc"),
])
def test_the_reconcile_core_refuses_rules_it_cannot_apply(rules, auth, approvers, message):
    result = planned(with_access(rules, auth, approvers))
    assert result.phase == "Failed" and message in result.message, result.message


def test_a_key_only_agent_grants_by_group_to_users_a_coordinator_relays():
    """A coordinator's signed assertion carries its user's groups, so group grants and group
    approvers apply on an agent that knows only API keys (e2e/test_identity.py's worker)."""
    keys = {"apiKeys": {"secretKeyRef": {"name": "k", "key": "k"}}}
    rules = [{"verbs": ["chat"], "groups": ["engineering"]},
             {"verbs": ["read"], "principals": ["user:alice via key:1"]}]
    result = planned(with_access(rules, keys, ["group:approvers", "user:bob via key:1"]))
    assert result.phase == "Deploy", result.message
    env = env_of(container(render("agent", result.values)))
    assert json.loads(env["ACCESS_RULES"]) == rules
    assert env["TOOL_APPROVAL_APPROVERS"] == "group:approvers,user:bob via key:1"
    assert "AUTH_OIDC_ISSUER" not in env

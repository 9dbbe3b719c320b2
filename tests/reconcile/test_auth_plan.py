"""spec.auth of an Agent mapped to the chart, and the platform's auth.required failing closed."""

from kaos.reconcile import plan
from kaos.settings import Settings
from tests.reconcile.builders import agent, endpoint_of, mcpserver, modelapi

from .test_plan import observed_of

REQUIRED = Settings(auth_required=True)
KEYS = {"apiKeys": {"secretKeyRef": {"name": "coord-keys", "key": "keys"}}}


def test_agent_auth_reaches_the_chart_values():
    auth = {**KEYS, "oidc": {"jwksURL": "https://id.example/jwks", "audience": "kaos"},
            "credentials": {"secretKeyRef": {"name": "coord-token", "key": "token"}}}
    result = plan(agent(auth=auth), observed_of(modelapi()), Settings(), endpoint_of)
    assert result.phase == "Deploy" and result.values["auth"] == auth
    assert plan(agent(), observed_of(modelapi()), Settings(), endpoint_of).values["auth"] == {}


def test_required_auth_fails_an_agent_without_credentials_closed():
    result = plan(agent(), observed_of(modelapi()), REQUIRED, endpoint_of)
    assert result.phase == "Failed" and result.values is None
    assert "requires authentication (auth.required)" in result.message
    assert "spec.auth.apiKeys" in result.message
    for auth in (KEYS, {"oidc": {"jwksURL": "https://id.example/jwks"}}):
        assert plan(agent(auth=auth), observed_of(modelapi()), REQUIRED, endpoint_of).phase == "Deploy"


def test_required_auth_deploys_no_modelapi_or_mcpserver_it_cannot_guard():
    for resource in (modelapi(), mcpserver()):
        result = plan(resource, {}, REQUIRED, endpoint_of)
        assert result.phase == "Failed" and "not deployed rather than served open" in result.message
    external = mcpserver(url="https://tools.example/mcp")
    assert plan(external, {}, REQUIRED, endpoint_of).phase == "Deploy"

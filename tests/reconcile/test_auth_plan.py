"""spec.auth of Agents, ModelAPIs and MCPServers mapped to the charts, refused where KAOS cannot
enforce it, and the platform's auth.required failing closed for every kind KAOS serves."""

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


def test_admins_reach_the_chart_values_and_need_authentication():
    guarded = plan(agent(auth={**KEYS, "admins": ["key:1"]}), observed_of(modelapi()), Settings(), endpoint_of)
    assert guarded.phase == "Deploy" and guarded.values["auth"]["admins"] == ["key:1"]
    bare = plan(agent(auth={"admins": ["key:1"]}), observed_of(modelapi()), Settings(), endpoint_of)
    assert bare.phase == "Failed" and "spec.auth.admins names principals, but this Agent has no authentication" \
        in bare.message


LLAMACPP = {"model": "smollm2:135m", "engine": "llamacpp"}
OLLAMA = {"model": "llama3:8b", "engine": "ollama"}


def test_modelapi_and_mcpserver_auth_reach_their_chart_values():
    for resource, auth in ((modelapi(auth=KEYS), KEYS), (mcpserver(auth=KEYS), KEYS),
                           (mcpserver(auth={"oidc": {"jwksURL": "https://id.example/jwks"}}),
                            {"oidc": {"jwksURL": "https://id.example/jwks"}})):
        result = plan(resource, {}, Settings(), endpoint_of)
        assert result.phase == "Deploy" and result.values["auth"] == auth
    assert plan(modelapi(mode="Hosted", hostedConfig=LLAMACPP, auth=KEYS), {}, Settings(), endpoint_of).phase == "Deploy"
    assert plan(modelapi(), {}, Settings(), endpoint_of).values["auth"] == {}


def test_required_auth_fails_an_unguarded_modelapi_or_mcpserver_closed():
    for resource, kind in ((modelapi(), "ModelAPI"), (modelapi(mode="Hosted", hostedConfig=LLAMACPP), "ModelAPI"),
                           (mcpserver(), "MCPServer")):
        result = plan(resource, {}, REQUIRED, endpoint_of)
        assert result.phase == "Failed" and result.values is None
        assert f"requires authentication (auth.required) and this {kind} configures none" in result.message
        assert "spec.auth.apiKeys" in result.message
    for resource in (modelapi(auth=KEYS), modelapi(mode="Hosted", hostedConfig=LLAMACPP, auth=KEYS),
                     mcpserver(auth=KEYS), mcpserver(auth={"oidc": {"jwksURL": "https://id.example/jwks"}}),
                     mcpserver(url="https://tools.example/mcp", params="")):  # external: not served by KAOS
        assert plan(resource, {}, REQUIRED, endpoint_of).phase == "Deploy", resource


def test_auth_where_kaos_cannot_enforce_it_is_failed_not_served_open():
    for settings in (Settings(), REQUIRED):
        ollama = plan(modelapi(mode="Hosted", hostedConfig=OLLAMA, auth=KEYS), {}, settings, endpoint_of)
        assert ollama.phase == "Failed" and "Ollama cannot require a key" in ollama.message
        assert "hostedConfig.engine llamacpp" in ollama.message
        custom = plan(mcpserver(runtime="custom", container={"image": "me/tools:1"}, auth=KEYS), {}, settings,
                      endpoint_of)
        assert custom.phase == "Failed" and "only the python-string runtime enforces" in custom.message
        external = plan(mcpserver(url="https://tools.example/mcp", params="", auth=KEYS), {}, settings, endpoint_of)
        assert external.phase == "Failed" and "KAOS cannot guard it" in external.message
    unguarded_ollama = plan(modelapi(mode="Hosted", hostedConfig=OLLAMA), {}, REQUIRED, endpoint_of)
    assert unguarded_ollama.phase == "Failed" and "Ollama cannot require a key" in unguarded_ollama.message
    custom = plan(mcpserver(runtime="custom", container={"image": "me/tools:1"}), {}, REQUIRED, endpoint_of)
    assert custom.phase == "Failed" and "runtime 'custom' would serve its endpoint open" in custom.message
    assert plan(modelapi(mode="Hosted", hostedConfig=OLLAMA), {}, Settings(), endpoint_of).phase == "Deploy"


def test_an_agent_sends_no_credential_to_an_external_mcp_server():
    external = mcpserver("ext", url="https://tools.example/mcp", params="")
    values = plan(agent(mcp=["tools", "ext"]), observed_of(modelapi(), mcpserver(), external), Settings(),
                  endpoint_of).values
    assert values["mcpServers"] == [{"name": "tools", "url": "http://mcpserver-tools.team:8000/mcp"},
                                    {"name": "ext", "url": "https://tools.example/mcp", "external": True}]


def test_an_mcpserver_that_asks_for_identity_is_told_so_in_the_agents_values():
    asking = mcpserver("idtools", identity="forward", auth=KEYS)
    values = plan(agent(mcp=["tools", "idtools"]), observed_of(modelapi(), mcpserver(), asking), Settings(),
                  endpoint_of).values
    assert values["mcpServers"] == [{"name": "tools", "url": "http://mcpserver-tools.team:8000/mcp"},
                                    {"name": "idtools", "url": "http://mcpserver-idtools.team:8000/mcp",
                                     "identity": "forward"}]


def test_identity_forward_needs_a_server_kaos_deploys_with_api_keys():
    import pytest

    from kaos.crds import ValidationError, validate

    def resource(**spec) -> dict:
        return {"apiVersion": "kaos.tools/v1alpha1", "kind": "MCPServer", "metadata": {"name": "t", "namespace": "team"},
                "spec": {"runtime": "python-string", "identity": "forward", **spec}}

    for wrong in (resource(), resource(url="https://t.example/mcp", auth=KEYS)):
        with pytest.raises(ValidationError, match="identity forward needs a server KAOS deploys with auth.apiKeys"):
            validate(wrong)
    assert validate(resource(auth=KEYS))["spec"]["identity"] == "forward"

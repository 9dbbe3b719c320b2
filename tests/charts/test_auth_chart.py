"""spec.auth -> AUTH_* env vars: keys and the agent's own token only by secretKeyRef, so no
secret value is ever in the values, the rendered objects or a ConfigMap."""

from tests.charts.rendering import container, env_of, render, render_text

BASE = {"name": "coordinator", "modelAPI": {"name": "llm", "url": "http://modelapi-llm.team.svc.cluster.local:8000"}}
AUTH = {"apiKeys": {"secretKeyRef": {"name": "coord-keys", "key": "keys"}},
        "oidc": {"jwksURL": "https://id.example/jwks", "issuer": "https://id.example", "audience": "kaos"},
        "credentials": {"secretKeyRef": {"name": "coord-token", "key": "token"}}}


def test_auth_env_from_secrets_and_oidc_settings():
    env = env_of(container(render("agent", {**BASE, "auth": AUTH})))
    assert env["AUTH_API_KEYS"] == {"secretKeyRef": {"name": "coord-keys", "key": "keys"}}
    assert env["AUTH_OUTBOUND_TOKEN"] == {"secretKeyRef": {"name": "coord-token", "key": "token"}}
    assert (env["AUTH_OIDC_JWKS_URL"], env["AUTH_OIDC_ISSUER"], env["AUTH_OIDC_AUDIENCE"]) == (
        "https://id.example/jwks", "https://id.example", "kaos")


def test_admins_joined_with_commas_and_checked_by_the_schema():
    from tests.charts.rendering import render_error

    env = env_of(container(render("agent", {**BASE, "auth": {**AUTH, "admins": ["key:1", "key:4 via key:2"]}})))
    assert env["AUTH_ADMINS"] == "key:1,key:4 via key:2"
    assert "AUTH_ADMINS" not in env_of(container(render("agent", {**BASE, "auth": AUTH})))
    assert "admins" in render_error("agent", {**BASE, "auth": {**AUTH, "admins": ["root"]}})


def test_no_auth_no_variable_and_the_platform_setting():
    env = env_of(container(render("agent", BASE)))
    assert not [name for name in env if name.startswith("AUTH_")]
    settings = [d for d in render("kaos", {"auth": {"required": True}}) if d["kind"] == "ConfigMap"]
    assert any(d["data"].get("KAOS_AUTH_REQUIRED") == "true" for d in settings)


def test_the_schema_refuses_a_key_given_as_a_value():
    from tests.charts.rendering import render_error

    assert "auth" in render_error("agent", {**BASE, "auth": {"apiKeys": {"value": "sk-planted"}}})
    assert "sk-planted" not in render_text("agent", {**BASE, "auth": AUTH})


def test_the_agents_credential_goes_to_its_modelapi_and_each_kaos_mcp_server():
    servers = [{"name": "web-tools", "url": "http://mcpserver-web-tools.team.svc.cluster.local:8000/mcp"},
               {"name": "ext", "url": "https://tools.example/mcp", "external": True}]
    env = env_of(container(render("agent", {**BASE, "mcpServers": servers, "auth": AUTH})))
    token = {"secretKeyRef": {"name": "coord-token", "key": "token"}}
    assert env["MODEL_API_KEY"] == env["MCP_SERVER_WEB_TOOLS_TOKEN"] == env["AUTH_OUTBOUND_TOKEN"] == token
    assert "MCP_SERVER_EXT_TOKEN" not in env  # an external server gets no credential
    mine = env_of(container(render("agent", {**BASE, "auth": AUTH, "env": [{"name": "MODEL_API_KEY", "value": "k"}]})))
    assert mine["MODEL_API_KEY"] == "k"  # the user's env wins
    without = env_of(container(render("agent", {**BASE, "mcpServers": servers, "auth": {"apiKeys": AUTH["apiKeys"]}})))
    assert not [name for name in without if name.endswith("_TOKEN") or name == "MODEL_API_KEY"]


def test_mcpserver_auth_env_by_secret_reference_and_only_for_python_string():
    from tests.charts.rendering import render_error

    auth = {"apiKeys": AUTH["apiKeys"], "oidc": {"jwksURL": "https://id.example/jwks", "audience": "tools"}}
    docs = render("mcpserver", {"name": "tools", "params": "def f() -> str:\n    return 'x'\n", "auth": auth})
    env = env_of(container(docs))
    assert env["AUTH_API_KEYS"] == {"secretKeyRef": {"name": "coord-keys", "key": "keys"}}
    assert (env["AUTH_OIDC_JWKS_URL"], env["AUTH_OIDC_AUDIENCE"]) == ("https://id.example/jwks", "tools")
    assert container(docs)["readinessProbe"]["httpGet"]["path"] == "/health"
    assert not [name for name in env_of(container(render("mcpserver", {"name": "tools", "params": "x = 1"})))
                if name.startswith("AUTH_")]
    error = render_error("mcpserver", {"name": "tools", "runtime": "custom", "image": {"repository": "me/tools"},
                                       "auth": auth})
    assert "only the python-string runtime enforces" in error
    assert "auth" in render_error("mcpserver", {"name": "tools", "auth": {"apiKeys": {"value": "sk-planted"}}})


def test_an_mcp_server_that_asks_for_identity_is_told_by_name():
    servers = [{"name": "id-tools", "url": "http://mcpserver-id-tools.team.svc.cluster.local:8000/mcp",
                "identity": "forward"}, {"name": "web", "url": "http://mcpserver-web.team.svc.cluster.local:8000/mcp"}]
    env = env_of(container(render("agent", {**BASE, "mcpServers": servers, "auth": AUTH})))
    assert env["MCP_SERVER_ID_TOOLS_IDENTITY"] == "forward" and "MCP_SERVER_WEB_IDENTITY" not in env
    served = env_of(container(render("mcpserver", {"name": "id-tools", "params": "x = 1"})))
    assert served["MCP_SERVER_NAME"] == "id-tools"  # what the identity header is signed for

"""The mcpserver chart: python-string, registry runtimes, custom images, external servers."""

import pytest

from tests.charts.rendering import container, env_of, kinds, one, render, render_error

TOOLS = 'def echo(message: str) -> str:\n    """Echo."""\n    return message\n'
REGISTRY = {
    "fetch": {"image": {"repository": "ghcr.io/example/mcp-fetch", "tag": "1.2.0"}, "command": ["mcp-fetch"],
              "args": ["--port", "$(PORT)"], "env": [{"name": "UA", "value": "kaos"}], "port": 9000, "path": "/sse"},
    "time": {"image": {"repository": "ghcr.io/example/mcp-time"}, "healthPath": "/healthz"},
}


def mcp(**values):
    return render("mcpserver", {"name": "tools", **values})


def test_python_string_runs_the_kaos_runtime_with_the_tools_in_env():
    docs = mcp(params=TOOLS)
    assert kinds(docs) == ["Deployment", "Service"]
    c = container(docs)
    assert c["image"] == "ghcr.io/kaos-tools/kaos-runtime:0.1.0"
    assert c["command"] == ["kaos-runtime", "mcp"]
    env = env_of(c)
    assert env["MCP_TOOLS_STRING"] == TOOLS
    assert (env["HOST"], env["PORT"]) == ("0.0.0.0", "8000")
    assert c["readinessProbe"]["httpGet"] == c["livenessProbe"]["httpGet"] == {"path": "/health", "port": "http"}
    assert one(docs, "Service", "mcpserver-tools")["spec"]["ports"][0]["port"] == 8000


def test_registry_runtime_uses_the_entry_with_user_env_last():
    c = container(mcp(runtime="fetch", registry=REGISTRY, env=[{"name": "UA", "value": "mine"}]))
    assert c["image"] == "ghcr.io/example/mcp-fetch:1.2.0"
    assert c["command"] == ["mcp-fetch"] and c["args"] == ["--port", "$(PORT)"]
    assert c["ports"][0]["containerPort"] == 9000
    assert env_of(c) == {"HOST": "0.0.0.0", "PORT": "9000", "UA": "mine"}
    assert c["readinessProbe"]["tcpSocket"] == {"port": "http"}, "an arbitrary MCP server gets a TCP check"
    docs = mcp(runtime="fetch", registry=REGISTRY, gateway={"enabled": True})
    assert one(docs, "Service")["spec"]["ports"][0]["port"] == 9000, "the Service port is the runtime's port"
    assert one(docs, "HTTPRoute")["spec"]["rules"][0]["backendRefs"][0]["port"] == 9000
    timed = container(mcp(runtime="time", registry=REGISTRY))
    assert timed["image"] == "ghcr.io/example/mcp-time"
    assert timed["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}


def test_values_override_a_registry_entry():
    c = container(mcp(runtime="fetch", registry=REGISTRY, image={"repository": "mirror/fetch", "tag": "2"},
                      command=["other"], args=["--x"]))
    assert (c["image"], c["command"], c["args"]) == ("mirror/fetch:2", ["other"], ["--x"])


def test_custom_runs_the_given_image():
    docs = mcp(runtime="custom", image={"repository": "registry.example.com/tools", "tag": "3.1"},
               args=["--port", "$(PORT)"], serviceAccountName="tools-sa")
    c = container(docs)
    assert c["image"] == "registry.example.com/tools:3.1" and "command" not in c
    pod = one(docs, "Deployment")["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "tools-sa" and "automountServiceAccountToken" not in pod


def test_external_url_renders_nothing_but_is_a_valid_release():
    assert mcp(url="https://mcp.example.com/mcp", gateway={"enabled": True}, networkPolicy={"enabled": True}) == []


@pytest.mark.parametrize("values,message", [
    ({"runtime": "fetch"}, 'runtime: "fetch" is not python-string, custom, or a name in the runtime registry (empty)'),
    ({"runtime": "nope", "registry": REGISTRY}, "registry (fetch, time)"),
    ({"runtime": "custom"}, "image.repository: a custom MCPServer needs an image"),
])
def test_unusable_runtimes_fail_with_a_message_naming_the_value(values, message):
    assert message in render_error("mcpserver", {"name": "tools", **values})


def test_route_is_called_mcp_name_and_policy_admits_the_agents_using_it():
    docs = mcp(params=TOOLS, gateway={"enabled": True}, networkPolicy={"enabled": True})
    route = one(docs, "HTTPRoute", "mcp-tools")
    rule = route["spec"]["rules"][0]
    assert rule["matches"][0]["path"] == {"type": "PathPrefix", "value": "/team/mcp/tools"}
    assert rule["filters"][0]["requestHeaderModifier"]["set"] == [{"name": "X-Forwarded-Prefix", "value": "/team/mcp/tools"}]
    assert rule["backendRefs"] == [{"name": "mcpserver-tools", "port": 8000}]
    policy = one(docs, "NetworkPolicy", "mcpserver-tools")
    assert policy["spec"]["ingress"][0]["from"][-1] == {"podSelector": {"matchLabels": {"kaos.tools/uses-mcp-tools": "true"}}}
    agent_labels = one(render("agent", {"name": "a", "mcpServers": [{"name": "tools", "url": "http://x/mcp"}]}),
                       "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert agent_labels.items() >= policy["spec"]["ingress"][0]["from"][-1]["podSelector"]["matchLabels"].items()

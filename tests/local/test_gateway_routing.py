"""Gateway routing (pure): the cluster's HTTPRoute layout and timeouts."""

import pytest

from kaos.routes import Route, gateway_path, parse_route, route_timeout


@pytest.mark.parametrize("path, expected", [
    ("/default/agent/coordinator/v1/chat/completions", Route("default", "Agent", "coordinator", "/v1/chat/completions")),
    ("/ns/agent/a", Route("ns", "Agent", "a", "/")),
    ("/ns/agent/a/", Route("ns", "Agent", "a", "/")),
    ("/ns/modelapi/llm/health/liveliness", Route("ns", "ModelAPI", "llm", "/health/liveliness")),
    ("/ns/mcp/tools/mcp", Route("ns", "MCPServer", "tools", "/mcp")),
    ("/ns/mcp/tools/a/b/", Route("ns", "MCPServer", "tools", "/a/b/")),
])
def test_routes_strip_the_prefix(path, expected):
    assert parse_route(path) == expected


@pytest.mark.parametrize("path", ["/", "/ns", "/ns/agent", "/ns/agent/", "/ns/pod/x/health", "//agent/x", "/ns/mcpserver/x"])
def test_other_paths_are_not_routes(path):
    assert parse_route(path) is None


def test_gateway_path_is_the_inverse():
    for kind in ("Agent", "ModelAPI", "MCPServer"):
        route = parse_route(gateway_path("team", kind, "x") + "/health")
        assert (route.namespace, route.kind, route.name, route.path) == ("team", kind, "x", "/health")


@pytest.mark.parametrize("text, seconds", [("", 300.0), (None, 300.0), ("120s", 120.0), ("0s", None),
                                           ("1m30s", 90.0), ("500ms", 0.5), ("1h", 3600.0)])
def test_route_timeout(text, seconds):
    assert route_timeout(text) == seconds

"""kaos.mcp_discovery: an MCPServer's tools, asked once per endpoint, retried with backoff."""

import logging

import pytest

from kaos.backoff import Backoff
from kaos.mcp_discovery import ToolDiscovery, ToolsUnavailable, discover_tools
from tests.reconcile.test_backoff import Clock

LOG = logging.getLogger("test")


class Server:
    """tools/list of a server that answers, or not, as the test says."""

    def __init__(self, names=("echo",)):
        self.names = list(names)
        self.up = True
        self.asked: list[str] = []

    async def __call__(self, url: str) -> list[str]:
        self.asked.append(url)
        if not self.up:
            raise ToolsUnavailable(f"tools/list on {url} failed: connection refused")
        return self.names


async def test_tools_are_asked_once_per_endpoint_and_version():
    server = Server()
    discovery = ToolDiscovery(list_tools=server)
    assert discovery.known("s", "http://a/mcp") is None
    assert await discovery.tools("s", "http://a/mcp", logger=LOG) == ["echo"]
    assert await discovery.tools("s", "http://a/mcp", logger=LOG) == ["echo"]
    assert discovery.known("s", "http://a/mcp") == ["echo"]
    assert server.asked == ["http://a/mcp"]
    assert discovery.known("s", "http://b/mcp") is None, "another endpoint is asked again"
    assert discovery.known("s", "http://a/mcp", version=2) is None, "so is another server on the same URL"
    discovery.forget("s")
    assert discovery.known("s", "http://a/mcp") is None


async def test_a_server_that_does_not_answer_has_no_tools_until_asked_again_after_the_backoff():
    clock, server = Clock(), Server()
    server.up = False
    discovery = ToolDiscovery(Backoff(base=5.0, clock=clock), list_tools=server)
    assert await discovery.tools("s", "http://a/mcp", logger=LOG) == []
    assert discovery.known("s", "http://a/mcp") == [] and not discovery.retry_due("s")
    assert discovery.retry_in("s") == 5.0
    clock.now += 5.0
    assert discovery.retry_due("s") and discovery.known("s", "http://a/mcp") is None
    server.up = True
    assert await discovery.tools("s", "http://a/mcp", logger=LOG) == ["echo"]
    assert not discovery.retry_due("s") and discovery.retry_in("s") == 0.0
    assert len(server.asked) == 2


async def test_an_unreachable_url_is_tools_unavailable():
    with pytest.raises(ToolsUnavailable, match="tools/list on http://127.0.0.1:9/mcp failed"):
        await discover_tools("http://127.0.0.1:9/mcp", timeout=5)


@pytest.fixture
def guarded_server(tmp_path):
    """A real `kaos-runtime mcp` with an API key: tools/list needs a token the control plane lacks."""
    from tests.support.processes import spawn, wait_until_ok

    service = spawn("guarded-mcp", ["-m", "kaos_runtime", "mcp"], {
        "MCP_TOOLS_STRING": "def shout(text: str) -> str:\n    return text.upper()\n\ndef echo(text: str) -> str:\n"
                            "    return text\n", "AUTH_API_KEYS": "sk-discovery-test-key"}, str(tmp_path))
    wait_until_ok(service, "/health")
    yield service
    service.stop()


async def test_a_guarded_python_string_server_is_read_from_its_open_health_path(guarded_server):
    assert await discover_tools(guarded_server.url + "/mcp", timeout=10) == ["echo", "shout"]


async def test_a_refused_server_without_health_tools_is_unavailable_naming_why():
    import http.server
    import threading

    class Refusing(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.send_response(401)
            self.send_header("WWW-Authenticate", "Bearer")
            self.send_header("content-length", "0")
            self.end_headers()

        def do_GET(self):
            self.send_response(404)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Refusing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with pytest.raises(ToolsUnavailable, match=r"was refused \(HTTP 401/403.*names no tools"):
            await discover_tools(f"http://127.0.0.1:{server.server_address[1]}/mcp", timeout=10)
    finally:
        server.shutdown()

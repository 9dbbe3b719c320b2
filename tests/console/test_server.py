"""The console's server side without a browser: the ASGI app, the health it tells, the
Kubernetes catalog (against a stand-in API server) and the cluster proxy to workloads."""

from __future__ import annotations

import asyncio

import aiohttp.web
import httpx
import pytest

from kaos.api import API_VERSION, MODELAPI, SERVED_PLURALS
from kaos.console import Console, Health, LocalCatalog
from kaos.console.__main__ import application, parser
from kaos.console.__main__ import main as console_main
from kaos.console.catalog import CachedCatalog, CatalogError, sort_resources
from kaos.console.kubernetes import KubernetesCatalog, ServiceProxy, parse_route, upstream


def resource(kind, name, namespace="default", **status):
    return {"apiVersion": API_VERSION, "kind": kind, "metadata": {"name": name, "namespace": namespace},
            "spec": {}, "status": status}


def client(app) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://console")


# the app


async def test_the_page_and_its_files_are_served_with_a_strict_policy():
    async with client(Console(LocalCatalog(lambda: []))) as http:
        page = await http.get("/")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert "_console/static/js/main.js" in page.text
        policy = page.headers["content-security-policy"]
        assert "default-src 'self'" in policy and "script-src 'self'" in policy, "nothing from a CDN, no inline script"
        script = await http.get("/_console/static/js/pages/graph.js")
        assert script.status_code == 200 and script.headers["content-type"].startswith("text/javascript")
        assert (await http.get("/_console/static/console.css")).headers["content-type"].startswith("text/css")
        for bad in ["/_console/static/../app.py", "/_console/static/js/../../app.py", "/_console/static/nothing.js",
                    "/_console/static/app.py", "/_console/elsewhere"]:
            assert (await http.get(bad)).status_code == 404, bad
        assert (await http.post("/_console/api/resources")).status_code == 405
        assert (await http.get("/default/agent/a/health")).status_code == 404, "no proxy given: not the console's path"


def test_every_static_file_is_package_data():
    """pyproject's package-data globs hold every file of the front end (so an installed package has them)."""
    import tomllib
    from pathlib import Path

    import kaos.console

    static = Path(kaos.console.__file__).parent / "static"
    root = Path(__file__).resolve().parents[2]
    globs = tomllib.loads((root / "operator" / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["kaos.console"]
    shipped = {p for pattern in globs for p in static.parent.glob(pattern)}
    files = {p for p in static.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    assert files and files <= shipped, sorted(map(str, files - shipped))


async def test_resources_come_sorted_with_their_health_and_are_not_changed():
    stored = [resource("Agent", "b", phase="Ready", ready=True), resource("ModelAPI", "m", phase="Pending"),
              resource("Agent", "a", phase="Failed", message="image x cannot run locally")]
    async with client(Console(LocalCatalog(lambda: stored))) as http:
        payload = (await http.get("/_console/api/resources")).json()
    assert payload["source"] == "local"
    assert [(i["kind"], i["metadata"]["name"]) for i in payload["items"]] == [("ModelAPI", "m"), ("Agent", "a"), ("Agent", "b")]
    assert [i["health"]["state"] for i in payload["items"]] == ["starting", "failed", "ready"]
    assert payload["items"][1]["health"]["detail"] == "image x cannot run locally"
    assert all("health" not in item for item in stored), "the control plane's objects are never changed"


async def test_a_catalog_that_fails_is_told_in_words():
    class Broken:
        source = "kubernetes"

        async def resources(self):
            raise CatalogError("the Kubernetes API refused to list agents.kaos.tools (403 Forbidden)")

    async with client(Console(Broken())) as http:
        response = await http.get("/_console/api/resources")
    assert response.status_code == 502
    assert response.json() == {"error": "the Kubernetes API refused to list agents.kaos.tools (403 Forbidden)",
                               "source": "kubernetes"}


def test_health_tells_down_from_starting():
    health = Health()
    state = lambda **status: health.annotate([resource("Agent", "w", **status)])[0]["health"]["state"]  # noqa: E731
    assert state(phase="Pending") == "starting"
    assert state(phase="Waiting", message="ModelAPI llm (not ready)") == "waiting"
    assert state(phase="Ready", ready=True) == "ready"
    assert state(phase="Pending", message="0/1 replicas ready") == "down", "it was Ready and stopped answering"
    assert state(phase="Failed") == "failed"
    assert state(phase="Ready", ready=True) == "ready"
    health.annotate([])  # deleted
    assert state(phase="Pending") == "starting", "re-created: it starts afresh"


def test_a_triggers_health_is_its_phase_and_it_sorts_last():
    health = lambda **status: Health().annotate([resource("Trigger", "t", **status)])[0]["health"]  # noqa: E731
    assert health(phase="Ready", ready=True, message="next run at 2026-03-02T02:00:00Z") == {
        "state": "ready", "label": "Ready", "detail": "next run at 2026-03-02T02:00:00Z"}
    assert health(phase="Suspended")["state"] == "waiting" and health(phase="Suspended")["label"] == "Suspended"
    assert health(phase="Failed", message="schedule: bad")["state"] == "failed"
    assert health(phase="Waiting")["state"] == "waiting"
    items = [resource("Trigger", "t"), resource("Agent", "a"), resource("ModelAPI", "m")]
    assert [i["kind"] for i in sort_resources(items)] == ["ModelAPI", "Agent", "Trigger"]


async def test_the_cached_catalog_shares_one_listing():
    calls = []

    async def listing():
        calls.append(1)
        return [resource("Agent", "a")]

    now = [0.0]
    cached = CachedCatalog(LocalCatalog(listing), ttl=1.0, clock=lambda: now[0])
    await asyncio.gather(*(cached.resources() for _ in range(5)))
    assert len(calls) == 1
    now[0] = 1.5
    await cached.resources()
    assert len(calls) == 2


# the cluster side


class FakeApiServer:
    """Answers the kaos.tools list calls like the Kubernetes API, for one bearer token."""

    def __init__(self, objects: list[dict], token: str = "sa-token"):
        self.objects = objects
        self.token = token
        self.paths: list[str] = []

    async def handle(self, request: aiohttp.web.Request) -> aiohttp.web.Response:
        self.paths.append(request.path)
        if request.headers.get("Authorization") != f"Bearer {self.token}":
            return aiohttp.web.json_response({"kind": "Status", "code": 403, "reason": "Forbidden", "message":
                                              'agents.kaos.tools is forbidden: User "system:anonymous" cannot list'},
                                             status=403)
        parts = request.path.strip("/").split("/")  # apis/kaos.tools/v1alpha1[/namespaces/<ns>]/<plural>
        plural, namespace = parts[-1], parts[4] if len(parts) == 6 else None
        kind = next(kind for kind, its_plural in SERVED_PLURALS.items() if its_plural == plural)
        items = [{k: v for k, v in o.items() if k not in ("apiVersion", "kind")} for o in self.objects
                 if o["kind"] == kind and namespace in (None, o["metadata"]["namespace"])]
        return aiohttp.web.json_response({"kind": f"{kind}List", "items": items})


@pytest.fixture
async def serve():
    runners = []

    async def start(handler) -> str:
        app = aiohttp.web.Application()
        app.router.add_route("*", "/{tail:.*}", handler)
        runner = aiohttp.web.AppRunner(app)
        await runner.setup()
        site = aiohttp.web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        runners.append(runner)
        return f"http://127.0.0.1:{runner.addresses[0][1]}"

    yield start
    for runner in runners:
        await runner.cleanup()


async def test_the_kubernetes_catalog_lists_with_the_service_account_token(serve, tmp_path):
    objects = [resource("Agent", "a", "team"), resource("ModelAPI", "m", "team"), resource("Agent", "x", "other")]
    api = FakeApiServer(objects)
    url = await serve(api.handle)
    token = tmp_path / "token"
    token.write_text("sa-token\n")
    catalog = KubernetesCatalog.connect(url, token_file=token)
    try:
        items = await catalog.resources()
        assert sorted((i["kind"], i["metadata"]["name"]) for i in items) == [("Agent", "a"), ("Agent", "x"), ("ModelAPI", "m")]
        assert all(i["apiVersion"] == API_VERSION for i in items), "list items get their kind back"
        assert sorted(api.paths) == sorted(f"/apis/{API_VERSION}/{plural}" for plural in SERVED_PLURALS.values())
        namespaced = KubernetesCatalog.connect(url, token_file=token, namespaces=("team",))
        assert {i["metadata"]["namespace"] for i in await namespaced.resources()} == {"team"}
        await namespaced.aclose()

        token.write_text("rotated")  # the kubelet rotates the token: read each time
        with pytest.raises(CatalogError) as refused:
            await catalog.resources()
        assert "the Kubernetes API refused to list" in str(refused.value) and ".kaos.tools: forbidden: " in str(refused.value)
        assert "needs get and list on agents, modelapis, mcpservers, triggers and memorystores" in str(refused.value)
    finally:
        await catalog.aclose()


async def test_an_unreachable_api_server_is_told_in_words():
    catalog = KubernetesCatalog.connect("http://127.0.0.1:9", timeout=2)
    try:
        with pytest.raises(CatalogError, match="cannot reach the Kubernetes API at http://127.0.0.1:9"):
            await catalog.resources()
    finally:
        await catalog.aclose()


def test_routes_and_upstreams_follow_the_gateway_layout():
    assert parse_route("/team/agent/a/v1/chat/completions") == ("team", "Agent", "a", "/v1/chat/completions")
    assert parse_route("/team/mcp/t") == ("team", "MCPServer", "t", "/")
    assert parse_route("/team/pod/a/x") is None and parse_route("/_console/x") is None
    agent = resource("Agent", "a", "team", endpoint="http://agent-a.team.svc.cluster.local:8000")
    assert str(upstream(agent, "/memory/events")) == "http://agent-a.team.svc.cluster.local:8000/memory/events"
    mcp = resource("MCPServer", "t", "team", endpoint="http://mcpserver-t.team.svc.cluster.local:8000/mcp")
    assert str(upstream(mcp, "/mcp")) == "http://mcpserver-t.team.svc.cluster.local:8000/mcp"
    external = resource("MCPServer", "e", "team", endpoint="https://tools.example/api/stream")
    assert str(upstream(external, "/mcp")) == "https://tools.example/api/stream", "spec.url is the MCP URL itself"
    assert upstream(resource("Agent", "p", "team", phase="Pending"), "/health") is None


async def test_the_cluster_console_reaches_workloads_through_their_endpoints(serve):
    seen = []

    async def workload(request: aiohttp.web.Request) -> aiohttp.web.StreamResponse:
        seen.append((request.method, request.path_qs, await request.text(), request.headers.get("X-Session-ID")))
        response = aiohttp.web.StreamResponse(headers={"Content-Type": "text/event-stream", "X-Session-ID": "s1"})
        await response.prepare(request)
        for piece in ("data: one\n\n", "data: two\n\n", "data: [DONE]\n\n"):
            await response.write(piece.encode())
        return response

    base = await serve(workload)
    items = [resource("Agent", "a", "team", endpoint=base, phase="Ready", ready=True),
             resource("Agent", "p", "team", phase="Waiting", message="ModelAPI m (not found)")]
    catalog = LocalCatalog(lambda: items)
    app = Console(catalog, proxy=ServiceProxy(catalog))
    try:
        async with client(app) as http:
            answer = await http.post("/team/agent/a/v1/chat/completions?x=1", content=b'{"stream": true}',
                                     headers={"X-Session-ID": "s1"})
            assert answer.status_code == 200 and answer.text == "data: one\n\ndata: two\n\ndata: [DONE]\n\n"
            assert answer.headers["x-session-id"] == "s1"
            assert seen == [("POST", "/v1/chat/completions?x=1", '{"stream": true}', "s1")]
            missing = await http.get("/team/agent/nobody/health")
            assert missing.status_code == 404 and missing.json()["detail"] == "no Agent 'nobody' in namespace 'team'"
            waiting = await http.get("/other/agent/a/health")
            assert waiting.status_code == 404
            pending = await http.get("/team/agent/p/health")
            assert pending.status_code == 503
            assert pending.json()["detail"] == "Agent p has no endpoint yet (phase Waiting): ModelAPI m (not found)"
            page = await http.get("/")
            assert page.status_code == 200, "the console's own paths still win"
    finally:
        await app.proxy.aclose()


def test_the_command_line(capsys, monkeypatch):
    args = parser().parse_args(["--host", "0.0.0.0", "--port", "8080", "--namespace", "a", "--namespace", "b"])
    assert (args.host, args.port, args.namespaces) == ("0.0.0.0", 8080, ["a", "b"])
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert console_main(["--port", "0"]) == 2
    assert "not running in a Kubernetes pod (KUBERNETES_SERVICE_HOST is unset)" in capsys.readouterr().err


def test_in_cluster_configuration(monkeypatch):
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "fd00::1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "6443")
    catalog = KubernetesCatalog.in_cluster(("team",))
    assert catalog.server == "https://[fd00::1]:6443"
    assert catalog.lists()[0] == (MODELAPI, "team")


async def test_the_cluster_console_passes_the_users_token_to_the_workload(serve):
    from tests.support.guarded import CHALLENGE, guarded_handler

    token = "user-token-for-the-console-test"
    items = [resource("Agent", "a", "team", endpoint=await serve(guarded_handler(token)), phase="Ready", ready=True)]
    catalog = LocalCatalog(lambda: items)
    app = Console(catalog, proxy=ServiceProxy(catalog))
    try:
        async with client(app) as http:
            refused = await http.post("/team/agent/a/v1/chat/completions", content=b"{}")
            assert refused.status_code == 401 and refused.headers["www-authenticate"] == CHALLENGE
            served = await http.post("/team/agent/a/v1/chat/completions", content=b"{}",
                                     headers={"Authorization": f"Bearer {token}"})
            assert served.status_code == 200
            assert served.json() == {"path": "/v1/chat/completions", "authorization": f"Bearer {token}"}
    finally:
        await app.proxy.aclose()


async def test_the_cluster_console_refuses_other_sites_and_a_modelapis_admin_paths(serve):
    """kaos-console forwards to every workload: a page of another site may not use it, and of a
    ModelAPI only the paths that serve models are reached (issue 26)."""
    seen = []

    async def workload(request: aiohttp.web.Request) -> aiohttp.web.Response:
        seen.append((request.method, request.path))
        return aiohttp.web.json_response({"ok": True})

    base = await serve(workload)
    items = [resource("Agent", "a", "team", endpoint=base, phase="Ready", ready=True),
             resource("ModelAPI", "m", "team", endpoint=base, phase="Ready", ready=True)]
    catalog = LocalCatalog(lambda: items)
    proxy = ServiceProxy(catalog)
    try:
        async with client(application(catalog, proxy)) as http:
            chat = "/team/agent/a/v1/chat/completions"
            assert (await http.post(chat, content=b"{}", headers={"content-type": "text/plain"})).status_code == 415
            assert (await http.post(chat, json={}, headers={"origin": "http://evil.example"})).status_code == 403
            assert (await http.post(chat, json={}, headers={"sec-fetch-site": "cross-site"})).status_code == 403
            assert (await http.post(chat, json={})).status_code == 200
            assert (await http.get("/team/modelapi/m/v1/models")).status_code == 200
            for path in ("/key/list", "/health", "/ui", "/config/update"):
                refused = await http.get(f"/team/modelapi/m{path}")
                assert refused.status_code == 404 and "adminRoutes" in refused.json()["detail"], path
            items[1]["spec"] = {"gatewayRoute": {"adminRoutes": True}}
            assert (await http.get("/team/modelapi/m/key/list")).status_code == 200
        assert seen == [("POST", "/v1/chat/completions"), ("GET", "/v1/models"), ("GET", "/key/list")]
    finally:
        await proxy.aclose()

"""The local gateway passes a user's bearer token through: the Authorization header reaches the
workload unchanged, and the workload's 401 with its WWW-Authenticate challenge comes back."""

import aiohttp.web
import httpx

from kaos.local.gateway import Gateway
from kaos.local.ports import free_port
from kaos.routes import Backend
from tests.local.test_gateway_proxy import running
from tests.support.guarded import CHALLENGE, guarded_handler

TOKEN = "user-token-for-the-gateway-test"


async def test_the_gateway_forwards_authorization_and_returns_the_challenge():
    app = aiohttp.web.Application()
    app.router.add_route("*", "/{tail:.*}", guarded_handler(TOKEN))
    runner = aiohttp.web.AppRunner(app)
    await runner.setup()
    site = aiohttp.web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    gateway = Gateway(lambda route: Backend(runner.addresses[0][1]))
    port = free_port()
    try:
        async with running(gateway, port):
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
                refused = await client.post("/team/agent/a/v1/chat/completions", json={})
                assert refused.status_code == 401
                assert refused.headers["www-authenticate"] == CHALLENGE
                served = await client.post("/team/agent/a/v1/chat/completions", json={},
                                           headers={"Authorization": f"Bearer {TOKEN}"})
                assert served.status_code == 200
                assert served.json() == {"path": "/v1/chat/completions", "authorization": f"Bearer {TOKEN}"}
    finally:
        await gateway.aclose()
        await runner.cleanup()

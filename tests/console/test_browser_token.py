"""The console's Token field in Chromium: a guarded workload's 401 says to enter a token; once
entered, the page is shown again and sends it as Authorization to the workload paths (never to the console's own
API) for this tab only; Forget stops it."""

from __future__ import annotations

import pytest

from kaos.console import Console, LocalCatalog
from tests.console.conftest import VIEWPORT, console_served
from tests.console.test_server import resource

TOKEN = "user-token-for-the-browser-test"
pytestmark = pytest.mark.timeout(120)


class GuardedModelAPI:
    """ASGI stand-in of a ModelAPI with spec.auth, recording the Authorization of each request."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None]] = []

    async def __call__(self, scope, receive, send) -> None:
        authorization = dict(scope["headers"]).get(b"authorization")
        self.seen.append((scope["path"], authorization.decode() if authorization else None))
        if authorization != f"Bearer {TOKEN}".encode():
            body, status, headers = b'{"detail": "authentication required"}', 401, [(b"www-authenticate", b'Bearer realm="kaos"')]
        else:
            body, status, headers = b'{"data": [{"id": "guarded-model"}]}', 200, []
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"), *headers]})
        await send({"type": "http.response.body", "body": body})


@pytest.fixture(scope="module")
def console():
    items = [resource("ModelAPI", "m", "team", phase="Ready", ready=True, endpoint="http://m")]
    items[0]["spec"] = {"mode": "Proxy", "proxyConfig": {"models": ["guarded-model"]}}
    workload = GuardedModelAPI()
    app = Console(LocalCatalog(lambda: items), proxy=workload)
    own: list[str | None] = []

    async def recording(scope, receive, send):
        if scope["type"] == "http" and scope["path"].startswith("/_console/"):
            authorization = dict(scope["headers"]).get(b"authorization")
            own.append(authorization.decode() if authorization else None)
        await app(scope, receive, send)

    with console_served(recording) as url:
        yield url, workload, own


def test_a_token_entered_in_the_header_reaches_the_workload(browser, console, screenshots):
    url, workload, own = console
    context = browser.new_context(viewport=VIEWPORT, base_url=url)
    page = context.new_page()
    page.set_default_timeout(30_000)
    try:
        page.goto("/#/modelapi/team/m")
        refused = page.locator("text=needs a token (HTTP 401)")
        refused.wait_for()
        assert workload.seen[-1] == ("/team/modelapi/m/v1/models", None)

        page.get_by_label("Token").fill(f"Bearer {TOKEN}")  # a pasted "Bearer " prefix is dropped
        page.get_by_role("button", name="Use").click()
        assert page.locator("#token-state").inner_text() == "sent to workloads"
        page.screenshot(path=str(screenshots.folder / "token-set.png"))
        assert page.get_by_label("Token").input_value() == "", "the field does not keep showing the token"
        page.locator('ul[aria-label="Models served now"] li').wait_for()
        assert page.locator('ul[aria-label="Models served now"] li').all_inner_texts() == ["guarded-model"]
        assert workload.seen[-1] == ("/team/modelapi/m/v1/models", f"Bearer {TOKEN}")
        assert own and set(own) == {None}, "the console's own API never gets the token"

        page.reload()  # kept for the tab
        page.locator('ul[aria-label="Models served now"] li').wait_for()
        page.get_by_role("button", name="Forget").click()
        refused.wait_for()
        assert workload.seen[-1] == ("/team/modelapi/m/v1/models", None)

        other = context.browser.new_context(viewport=VIEWPORT, base_url=url).new_page()
        other.goto("/#/modelapi/team/m")
        other.locator("text=needs a token (HTTP 401)").wait_for()  # another tab's session has none
        other.context.close()
    finally:
        context.close()

"""The console in a real browser: Playwright (Python) driving Debian's Chromium, headless,
against `kaos up --detach` of a copy of examples/quickstart/ on a free port with its own KAOS_HOME.

The copy differs from the quickstart only in scripted model replies (DEBUG_MOCK_RESPONSES in
spec.config.env): the coordinator delegates to the worker, the worker calls its `add` tool,
so a chat shows a delegation and a tool call without any model. Nothing is downloaded at run
time: scripts/setup-test installs chromium (apt) and playwright (the dev extra).

Screenshots of every page go to <pytest's base temp>/console-screenshots/ (printed at the end).
"""

from __future__ import annotations

import json
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest
import yaml

from tests.support.kaos_cli import Kaos, kaos_running
from tests.support.polling import wait_until

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "examples" / "quickstart"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
VIEWPORT = {"width": 1366, "height": 860}  # a laptop screen

TASK = "Add 2 and 3 with your tools"
WORKER_ANSWER = "2 + 3 = 5 (computed with the add tool)"
COORDINATOR_ANSWER = "The worker computed it: 2 + 3 = 5."
FOLLOW_UP_ANSWER = "You are welcome; this is the same session."


def fenced(kind: str, payload: dict) -> str:
    """A model reply asking the agent for work: a ```tool_call or ```delegate block."""
    return f"```{kind}\n{json.dumps(payload)}\n```"


SCRIPTS = {
    "coordinator": [fenced("delegate", {"agent": "worker", "task": TASK}), COORDINATOR_ANSWER, FOLLOW_UP_ANSWER],
    "worker": [fenced("tool_call", {"tool": "add", "arguments": {"a": 2, "b": 3}}), WORKER_ANSWER],
}


def scripted_quickstart(folder: Path) -> Path:
    """examples/quickstart/ with the agents' model replies scripted."""
    folder.mkdir(parents=True, exist_ok=True)
    for source in sorted(QUICKSTART.glob("*.yaml")):
        manifest = yaml.safe_load(source.read_text())
        name = manifest["metadata"]["name"]
        if manifest["kind"] == "Agent" and name in SCRIPTS:
            env = manifest["spec"].setdefault("config", {}).setdefault("env", [])
            env.append({"name": "DEBUG_MOCK_RESPONSES", "value": json.dumps(SCRIPTS[name])})
        (folder / source.name).write_text(yaml.safe_dump(manifest, sort_keys=False))
    return folder


@pytest.fixture(scope="module")
def kaos_up(tmp_path_factory) -> Kaos:
    base = tmp_path_factory.mktemp("console")
    with kaos_running(base / "home", scripted_quickstart(base / "manifests")) as kaos:
        yield kaos


@contextmanager
def launched_chromium(extra_args: tuple[str, ...] = ()) -> Iterator:
    """Debian's Chromium, headless, through Playwright (``extra_args`` added to CHROMIUM_ARGS);
    the test fails, not skips, when either is missing."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("playwright is not installed: run scripts/setup-test (it is in the dev group)")
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: run scripts/setup-test (it installs Debian's chromium package)")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, *extra_args])
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def browser():
    """Chromium for one module: Playwright's sync API runs an event loop in this thread while it
    is open, which the asyncio tests of other modules must not find running."""
    with launched_chromium() as chromium:
        yield chromium


class Screenshots:
    def __init__(self, folder: Path):
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)

    def save(self, page, name: str) -> Path:
        path = self.folder / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path


_shots: Screenshots | None = None


@pytest.fixture(scope="session")
def screenshots(tmp_path_factory) -> Screenshots:
    global _shots
    _shots = Screenshots(tmp_path_factory.getbasetemp() / "console-screenshots")
    return _shots


def pytest_terminal_summary(terminalreporter):
    if _shots is not None and any(_shots.folder.glob("*.png")):
        terminalreporter.write_line(f"console screenshots: {_shots.folder}")


@contextmanager
def console_served(app) -> Iterator[str]:
    """The console ``app`` served by uvicorn on a free loopback port, in a thread; its base URL."""
    import threading

    import uvicorn

    from kaos.local.ports import free_port

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_until(lambda: server.started, timeout=15, what="the console server")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


@contextmanager
def proxied_console(items: list[dict], proxy) -> Iterator[tuple[str, object]]:
    """The console of the resources ``items`` with ``proxy`` (a stand-in for the workloads behind
    its proxy routes), served: (its base URL, the proxy)."""
    from kaos.console import Console, LocalCatalog

    with console_served(Console(LocalCatalog(lambda: items), proxy=proxy)) as url:
        yield url, proxy


@contextmanager
def opened_page(browser, base_url: str):
    """A fresh page on the console at ``base_url``; JavaScript errors fail the test."""
    context = browser.new_context(viewport=VIEWPORT, base_url=base_url)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.set_default_timeout(30_000)
    yield page
    context.close()
    assert not errors, f"JavaScript errors in the console: {errors}"


@pytest.fixture(scope="module")
def console(kaos_up):
    """The console ``page`` opens: (its URL, the stand-in behind its proxy routes). This one is
    `kaos up`'s, with real workloads; a test module that serves its own overrides it."""
    return kaos_up.url, None


@pytest.fixture
def page(browser, console):
    with opened_page(browser, console[0]) as page:
        yield page


def overview_row(page, resource: str) -> tuple[str | None, list[str]]:
    """The overview's row of ``Kind/namespace/name``: its data-state and its cells' texts."""
    page.goto("/")
    row = page.locator(f'tr[data-resource="{resource}"]')
    row.wait_for()
    return row.get_attribute("data-state"), row.locator("td, th").all_inner_texts()


def attribute(page, selector: str, name: str) -> str | None:
    """An attribute of the first match, or None while nothing matches (never waits)."""
    element = page.query_selector(selector)
    return element.get_attribute(name) if element else None


def eventually_true(check, timeout: float = 15, what: str = "condition"):
    return wait_until(check, timeout=timeout, interval=0.1, what=what)

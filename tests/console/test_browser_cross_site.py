"""Another web page against `kaos up`, in real Chromium (issue 26).

A control plane runs an agent (scripted replies, no model). An attacker's page is served from a
second HTTP server on 127.0.0.1 (another port: another origin) and tries what a page may do
without a CORS preflight: fetch() POSTs with a text/plain body and form POSTs, to /_kaos/apply
(a python-string MCPServer, whose code would run as the user) and to the agent's chat through the
gateway; and it tries to read /_kaos/resources and the agent's memory. Nothing is created, no turn
runs, nothing is read. Then DNS rebinding: Chromium resolves rebind.test to 127.0.0.1
(--host-resolver-rules) and loads http://rebind.test:<port>/: the page is same-origin with
everything it asks, and the server refuses its Host, so it reads no spec, memory or approval.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import httpx
import pytest

from kaos.api import API_VERSION
from kaos.cli.client import Client, spawn_control_plane, stop_control_plane
from kaos.local.ports import free_port
from tests.console.conftest import CHROMIUM, CHROMIUM_ARGS
from tests.support.http_server import StaticServer
from tests.support.polling import wait_until

ROOT = Path(__file__).resolve().parents[2]
REBIND = "rebind.test"
pytestmark = pytest.mark.timeout(180)

AGENT = {"apiVersion": API_VERSION, "kind": "Agent", "metadata": {"name": "target"},
         "spec": {"modelAPI": "llm", "model": "m", "waitForDependencies": False,
                  "config": {"env": [{"name": "DEBUG_MOCK_RESPONSES", "value": json.dumps(["a turn ran"] * 20)}]}}}
MCPSERVER = {"apiVersion": API_VERSION, "kind": "MCPServer", "metadata": {"name": "pwned"},
             "spec": {"runtime": "python-string", "params": "def ok() -> str:\n    return 'x'\n"}}
APPLY = json.dumps({"documents": [{"manifest": MCPSERVER, "source": "attacker"}]})
CHAT = json.dumps({"model": "target", "messages": [{"role": "user", "content": "hello from elsewhere"}]})

# The attacker's page: {target} is the gateway of `kaos up`.
ATTACK = """<!doctype html>
<html><body>
<form id="apply" method="POST" action="{target}/_kaos/apply" enctype="text/plain" target="sink-apply">
  <input type="hidden" name="{apply_name}" value="{apply_value}"></form>
<form id="chat" method="POST" action="{target}/default/agent/target/v1/chat/completions" enctype="text/plain"
      target="sink-chat"><input type="hidden" name="{chat_name}" value="{chat_value}"></form>
<iframe name="sink-apply"></iframe><iframe name="sink-chat"></iframe>
<script>
async function attempt(url, options) {{
  try {{
    const response = await fetch(url, options);
    return response.type === 'opaque' ? 'sent (opaque)' : 'read ' + response.status + ': ' + await response.text();
  }} catch (error) {{ return 'blocked: ' + error; }}
}}
window.attack = async () => ({{
  applyText: await attempt('{target}/_kaos/apply',
    {{method: 'POST', mode: 'no-cors', headers: {{'Content-Type': 'text/plain'}}, body: {apply}}}),
  applyJson: await attempt('{target}/_kaos/apply',
    {{method: 'POST', headers: {{'Content-Type': 'application/json'}}, body: {apply}}}),
  chatText: await attempt('{target}/default/agent/target/v1/chat/completions',
    {{method: 'POST', mode: 'no-cors', headers: {{'Content-Type': 'text/plain'}}, body: {chat}}}),
  chatJson: await attempt('{target}/default/agent/target/v1/chat/completions',
    {{method: 'POST', headers: {{'Content-Type': 'application/json'}}, body: {chat}}}),
  readResources: await attempt('{target}/_kaos/resources', {{}}),
  readConsole: await attempt('{target}/_console/api/resources', {{}}),
  readMemory: await attempt('{target}/default/agent/target/memory/events', {{}}),
}});
</script></body></html>"""


def attack_page(target: str) -> bytes:
    def split(body: str) -> tuple[str, str]:
        """A text/plain form sends name=value: the JSON is cut at its last '"' so name + '=' + value
        is valid JSON with one extra key (the classic way a form posts JSON)."""
        name = body[:-1] + ', "x": "'
        return name, '"}'

    apply_name, apply_value = split(APPLY)
    chat_name, chat_value = split(CHAT)

    def attribute(text: str) -> str:
        return text.replace("&", "&amp;").replace('"', "&quot;")

    return ATTACK.format(target=target, apply=json.dumps(APPLY), chat=json.dumps(CHAT),
                         apply_name=attribute(apply_name), apply_value=attribute(apply_value),
                         chat_name=attribute(chat_name), chat_value=attribute(chat_value)).encode()


@pytest.fixture(scope="module")
def plane(tmp_path_factory):
    home = tmp_path_factory.mktemp("cross-site")
    tools = ROOT / ".tools" / "bin"
    env = {"PATH": f"{tools}{os.pathsep}{os.environ.get('PATH', '')}"} if tools.is_dir() else {}
    state = spawn_control_plane(home, free_port(), timeout=60, extra_env=env)
    client = Client.of(state)
    client.apply([(AGENT, "agent.yaml")])
    wait_until(lambda: all((r.get("status") or {}).get("ready") for r in client.resources("Agent")), 90, interval=0.2,
               what="the agent to be Ready")
    yield state, client
    client.close()
    stop_control_plane(home, timeout=60)


@pytest.fixture(scope="module")
def attacker(plane):
    """The attacker's site: another port on 127.0.0.1, so another origin than the gateway's."""
    state, _ = plane
    server = StaticServer(attack_page(state.url), "text/html; charset=utf-8")
    yield server.url + "/"
    server.stop()


@pytest.fixture(scope="module")
def chromium():
    from playwright.sync_api import sync_playwright

    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: run scripts/setup-test (it installs Debian's chromium package)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM,
                                             args=[*CHROMIUM_ARGS, f"--host-resolver-rules=MAP {REBIND} 127.0.0.1"])
        yield browser
        browser.close()


def nothing_happened(state, client) -> None:
    assert [r["metadata"]["name"] for r in client.resources()] == ["target"], "no resource was created"
    memory = httpx.get(f"{state.url}/default/agent/target/memory/events", timeout=10).json()
    assert memory["total"] == 0, f"a turn ran: {memory['events']}"


def test_a_page_of_another_origin_can_neither_create_nor_read(chromium, plane, attacker):
    state, client = plane
    page = chromium.new_page()
    answers: dict[str, list[int]] = {}
    page.on("response", lambda response: answers.setdefault(response.request.method + " " + response.url, [])
            .append(response.status))
    try:
        page.goto(attacker)
        results = page.evaluate("attack()")
        for form in ("apply", "chat"):
            with page.expect_response(lambda response: response.request.method == "POST"
                                      and response.request.resource_type == "document"):
                page.evaluate(f"document.getElementById('{form}').submit()")
    finally:
        page.close()

    for name in ("readResources", "readConsole", "readMemory", "applyJson", "chatJson"):
        assert results[name].startswith("blocked"), (name, results[name])
    apply_url, chat_url = f"POST {state.url}/_kaos/apply", f"POST {state.url}/default/agent/target/v1/chat/completions"
    # the text/plain fetch() and the form of each reached the server, which refused them; the JSON
    # fetch()es never left the browser: their CORS preflight was not granted
    assert answers == {"GET " + attacker: [200], apply_url: [403, 403], chat_url: [403, 403]}, answers
    nothing_happened(state, client)


def test_a_rebound_name_reads_nothing(chromium, plane):
    state, client = plane
    page = chromium.new_page()
    try:
        opened = page.goto(f"http://{REBIND}:{state.port}/")
        assert opened.status == 421
        assert "--allow-host" in page.content()
        statuses = page.evaluate("""async () => {
            const paths = ['/_console/api/resources', '/_kaos/resources', '/default/agent/target/memory/events',
                           '/default/agent/target/memory/sessions', '/default/agent/target/approvals',
                           '/default/agent/target/.well-known/agent-card.json'];
            const read = [];
            for (const path of paths) read.push((await fetch(path)).status);
            const chat = await fetch('/default/agent/target/v1/chat/completions', {method: 'POST',
                headers: {'Content-Type': 'application/json'}, body: JSON.stringify({messages: [
                    {role: 'user', content: 'hello from a rebound page'}]})});
            return [...read, chat.status];
        }""")
        assert statuses == [421] * 7, statuses
    finally:
        page.close()
    nothing_happened(state, client)

"""The control plane of `kaos up` as a web page would try it (issue 26): a real control plane
process on a free port, spoken to over HTTP. The admin API wants this run's token, which only
the state file (mode 0600) holds; nothing answers to a Host it was not given (DNS rebinding); a
cross-origin or non-JSON request changes nothing."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from kaos.api import API_VERSION
from kaos.cli.client import Client, ControlPlaneError, spawn_control_plane, stop_control_plane
from kaos.local.ports import free_port
from kaos.local.state import STATE_FILE, State
from kaos.settings import variable

ROOT = Path(__file__).resolve().parents[2]
# What the attack of issue 26 created: a python-string MCPServer whose code then ran as the user.
PAYLOAD = {"documents": [{"manifest": {
    "apiVersion": API_VERSION, "kind": "MCPServer", "metadata": {"name": "pwned"},
    "spec": {"runtime": "python-string",
             "params": "import pathlib\npathlib.Path('/tmp/kaos-pwned').touch()\ndef ok() -> str:\n    return 'x'\n"}},
    "source": "attacker"}]}
pytestmark = pytest.mark.timeout(120)


def tools_env() -> dict:
    tools = ROOT / ".tools" / "bin"
    return {"PATH": f"{tools}{os.pathsep}{os.environ.get('PATH', '')}"} if tools.is_dir() else {}


@pytest.fixture(scope="module")
def plane(tmp_path_factory):
    home = tmp_path_factory.mktemp("guarded-home")
    state = spawn_control_plane(home, free_port(), timeout=60,
                                extra_env={**tools_env(), variable("allowed_hosts"): "kaos.test"})
    yield home, state
    stop_control_plane(home, timeout=60)


def test_the_state_file_holds_the_runs_token_for_its_user_only(plane):
    home, state = plane
    mode = stat.S_IMODE((home / STATE_FILE).stat().st_mode)
    assert mode == 0o600, oct(mode)
    assert len(state.token) >= 40 and json.loads((home / STATE_FILE).read_text())["token"] == state.token


def test_the_admin_api_wants_the_token(plane):
    home, state = plane
    for call in (lambda: httpx.get(f"{state.url}/_kaos/resources"),
                 lambda: httpx.get(f"{state.url}/_kaos/deployments", headers={"authorization": "Bearer wrong"}),
                 lambda: httpx.post(f"{state.url}/_kaos/down", json={}),
                 lambda: httpx.post(f"{state.url}/_kaos/apply", json=PAYLOAD)):
        refused = call()
        assert refused.status_code == 401, refused.text
        assert "token" in refused.json()["error"] and STATE_FILE in refused.json()["error"]
    assert httpx.get(f"{state.url}/_kaos/health").status_code == 200, "liveness needs no token"
    assert httpx.get(f"{state.url}/_kaos/metrics").status_code == 200, "nor the reconcile counts"
    with pytest.raises(ControlPlaneError, match="token"):
        Client(state.url, "a guess").resources()
    assert Client.from_home(home).resources() == []
    assert Client.of(State(state.pid, state.port, state.started, state.token)).health()["status"] == "ok"


def test_a_cross_origin_text_plain_post_creates_nothing(plane):
    """The request a web page may send without a CORS preflight, with or without the token."""
    home, state = plane
    body = json.dumps(PAYLOAD)
    token = {"authorization": f"Bearer {state.token}"}
    from_a_page = {"content-type": "text/plain;charset=UTF-8", "origin": "http://evil.example",
                   "sec-fetch-site": "cross-site", "sec-fetch-mode": "no-cors"}
    assert httpx.post(f"{state.url}/_kaos/apply", content=body, headers=from_a_page).status_code == 403
    assert httpx.post(f"{state.url}/_kaos/apply", content=body, headers={**from_a_page, **token}).status_code == 403
    as_text = httpx.post(f"{state.url}/_kaos/apply", content=body, headers={"content-type": "text/plain", **token})
    assert as_text.status_code == 415 and "application/json" in as_text.json()["detail"]
    form = httpx.post(f"{state.url}/_kaos/down", data={"x": "1"}, headers={"origin": "http://evil.example"})
    assert form.status_code == 403
    assert Client.from_home(home).resources() == [], "nothing was applied"
    assert httpx.get(f"{state.url}/_kaos/health").status_code == 200, "nor stopped"


@pytest.mark.parametrize("path", ["/_kaos/health", "/_console/api/resources", "/", "/default/agent/a/memory/events"])
def test_a_rebound_host_is_misdirected(plane, path):
    _, state = plane
    rebound = httpx.get(state.url + path, headers={"host": f"rebind.test:{state.port}"})
    assert rebound.status_code == 421
    detail = rebound.json()["detail"]
    assert "rebind.test" in detail and "--allow-host" in detail and variable("allowed_hosts") in detail


def test_the_names_the_user_allowed_are_served(plane):
    _, state = plane
    for host in (f"kaos.test:{state.port}", "kaos.test", f"localhost:{state.port}", f"[::1]:{state.port}"):
        assert httpx.get(f"{state.url}/_kaos/health", headers={"host": host}).status_code == 200, host
    assert httpx.get(f"{state.url}/_kaos/health", headers={"host": "kaos.test:1"}).status_code == 421


def test_kaos_up_allow_host(tmp_path):
    env = {**os.environ, **tools_env(), variable("home"): str(tmp_path / "home")}
    env.pop(variable("allowed_hosts"), None)
    kaos = shutil.which("kaos", path=str(Path(sys.executable).parent)) or "kaos"
    bad = subprocess.run([kaos, "up", "--allow-host", "http://x"], env=env, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "--allow-host" in bad.stderr and "not a host name" in bad.stderr
    port = free_port()
    up = subprocess.run([kaos, "up", "--detach", "--port", str(port), "--allow-host", "proxy.test"],
                        env=env, capture_output=True, text=True, timeout=120)
    try:
        assert up.returncode == 0, up.stderr
        url = f"http://127.0.0.1:{port}/_kaos/health"
        assert httpx.get(url, headers={"host": "proxy.test"}).status_code == 200
        assert httpx.get(url, headers={"host": "other.test"}).status_code == 421
    finally:
        subprocess.run([kaos, "down"], env=env, capture_output=True, timeout=90)

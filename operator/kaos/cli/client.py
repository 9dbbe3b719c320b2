"""Talk to a running local control plane over its admin API (used by the CLI and the e2e suite),
and start or stop one in the background. The admin API wants the token of the run, which the
control plane writes to its state file (kaos.local.state); ``Client.of(state)`` sends it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from kaos.local.state import State, read_state
from kaos.settings import variable

ADMIN = "/_kaos"


class ControlPlaneError(RuntimeError):
    """A refusal or failure the user should read (no traceback)."""


class NotRunning(ControlPlaneError):
    pass


class Client:
    def __init__(self, url: str, token: str, timeout: float = 30.0):
        self.url = url.rstrip("/")
        self.http = httpx.Client(base_url=self.url, timeout=timeout, headers={"Authorization": f"Bearer {token}"})

    @classmethod
    def of(cls, state: State, timeout: float = 30.0) -> "Client":
        """The client of the control plane ``state`` records (its URL and token)."""
        return cls(state.url, state.token, timeout)

    @classmethod
    def from_home(cls, home: Path, timeout: float = 30.0) -> "Client":
        state = read_state(home)
        if state is None:
            raise NotRunning(f"no local control plane is running ({variable('home')}={home}); start one with `kaos up`")
        return cls.of(state, timeout)

    def _call(self, method: str, path: str, **kwargs) -> dict:
        try:
            response = self.http.request(method, ADMIN + path, **kwargs)
        except httpx.ConnectError:
            raise NotRunning(f"the control plane at {self.url} does not answer; start one with `kaos up`") from None
        except httpx.HTTPError as error:
            raise ControlPlaneError(f"the control plane at {self.url} failed: {error}") from None
        try:
            payload = response.json()
        except ValueError:
            payload = {"error": response.text}
        if response.status_code >= 400:
            raise ControlPlaneError(payload.get("error") or response.text)
        return payload

    def health(self) -> dict:
        return self._call("GET", "/health")

    def apply(self, documents: list[tuple[dict, str]]) -> list[dict]:
        body = {"documents": [{"manifest": doc, "source": source} for doc, source in documents]}
        return self._call("POST", "/apply", json=body)["results"]

    def delete(self, kind: str, name: str, namespace: str = "default") -> dict:
        return self._call("POST", "/delete", json={"kind": kind, "name": name, "namespace": namespace})

    def resources(self, kind: str | None = None, namespace: str | None = None) -> list[dict]:
        params = {k: v for k, v in (("kind", kind), ("namespace", namespace)) if v}
        return self._call("GET", "/resources", params=params)["items"]

    def run_trigger(self, name: str, namespace: str = "default") -> dict:
        """A run of the Trigger now: ``{"runId", "sessionId"}`` (or why it did not start)."""
        return self._call("POST", "/trigger-run", json={"name": name, "namespace": namespace})

    def deployments(self) -> list[dict]:
        return self._call("GET", "/deployments")["items"]

    def down(self) -> None:
        self._call("POST", "/down", json={})

    def close(self) -> None:
        self.http.close()


def wait_until(condition, timeout: float, interval: float = 0.1, what: str = "condition"):
    """Poll ``condition()`` until it returns something truthy; TimeoutError after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def spawn_control_plane(home: Path, port: int, timeout: float = 30.0, extra_env: dict | None = None) -> State:
    """Start ``python -m kaos.local`` in the background (own session) and wait until it answers."""
    home.mkdir(parents=True, exist_ok=True)
    log = open(home / "controlplane.log", "ab")
    env = {**os.environ, variable("home"): str(home), **(extra_env or {})}
    process = subprocess.Popen(
        [sys.executable, "-m", "kaos.local", "--port", str(port)],
        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
    )
    log.close()

    def started() -> State | None:
        if process.poll() is not None:
            tail = (home / "controlplane.log").read_text(errors="replace").strip().splitlines()[-3:]
            raise ControlPlaneError("the control plane exited: " + " ".join(tail))
        state = read_state(home)
        return state if state and state.pid == process.pid else None

    return wait_until(started, timeout, what="the control plane to start")


def stop_control_plane(home: Path, timeout: float = 30.0) -> bool:
    """Ask the recorded control plane to stop and wait until its process is gone."""
    state = read_state(home)
    if state is None:
        return False
    try:
        Client.of(state).down()
    except ControlPlaneError:
        os.kill(state.pid, 15)
    wait_until(lambda: read_state(home) is None, timeout, what="the control plane to stop")
    return True


def answer_detail(response: httpx.Response) -> str:
    """What an agent's error answer says (its detail or error message), for a message to the user."""
    try:
        payload = response.json()
    except ValueError:
        return response.text.strip()[:300]
    if isinstance(payload, dict):
        error = payload.get("error")
        if isinstance(error, dict):
            return str(error.get("message") or error)
        return str(payload.get("detail") or error or payload)
    return str(payload)

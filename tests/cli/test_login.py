"""`kaos login` against a real issuer (Ory Hydra, tests/support/hydra.py) and `kaos up`: the CLI
runs as a process, prints the sign-in URL (--no-browser), Hydra's login and consent are played
over HTTP and the browser's redirect reaches the CLI's loopback callback. The token is kept in a
file of mode 0600, and `kaos chat` then reaches an agent with spec.auth.oidc and spec.access as
that user: bob (group engineering) chats, carol (sales) is refused by name. An expired token is
refreshed with the refresh token, or, without one, the CLI says to run `kaos login`; `kaos
logout` removes it. A wrong state, a refused login and an unreachable issuer are clear errors."""

from __future__ import annotations

import json
import shutil
import stat
import subprocess
from pathlib import Path

import httpx
import pytest
import yaml

from kaos.cli.credentials import context_of
from kaos.local.ports import free_port
from tests.support.hydra import running_hydra
from tests.support.kaos_cli import Kaos, kaos_running
from tests.support.polling import wait_until

pytestmark = pytest.mark.timeout(400)

AUDIENCE = "kaos-cli-test"
ANSWER = "Hello from the guarded agent."


def manifests(folder: Path, issuer: str) -> Path:
    """A mock model and one agent that accepts the issuer's users: engineering may chat."""
    folder.mkdir(parents=True, exist_ok=True)
    documents = [
        {"apiVersion": "kaos.tools/v1alpha1", "kind": "ModelAPI", "metadata": {"name": "login-llm"},
         "spec": {"mode": "Proxy", "proxyConfig": {"models": ["mock-model"], "configYaml": {"fromString": yaml.safe_dump(
             {"model_list": [{"model_name": "mock-model", "litellm_params": {
                 "model": "openai/mock-model", "mock_response": ANSWER}}]})}}}},
        {"apiVersion": "kaos.tools/v1alpha1", "kind": "Agent", "metadata": {"name": "guarded"},
         "spec": {"modelAPI": "login-llm", "model": "mock-model",
                  "auth": {"oidc": {"issuer": issuer, "audience": AUDIENCE}, "admins": ["group:approvers"]},
                  "access": [{"verbs": ["chat", "read"], "groups": ["engineering"]}],
                  "config": {"description": "Answers signed-in engineers"}}},
    ]
    (folder / "guarded.yaml").write_text(yaml.safe_dump_all(documents, sort_keys=False))
    return folder


@pytest.fixture(scope="module")
def hydra(tmp_path_factory):
    with running_hydra(tmp_path_factory.mktemp("hydra")) as issuer:
        yield issuer


@pytest.fixture(scope="module")
def client_id(hydra) -> str:
    return hydra.cli_client([AUDIENCE])


@pytest.fixture(scope="module")
def kaos(tmp_path_factory, hydra):
    base = tmp_path_factory.mktemp("login-cli")
    with kaos_running(base / "home", manifests(base / "manifests", hydra.issuer)) as kaos:
        kaos.env["XDG_CONFIG_HOME"] = str(base / "config")
        yield kaos


def credentials_file(kaos: Kaos) -> Path:
    return Path(kaos.env["XDG_CONFIG_HOME"]) / "kaos" / "credentials.json"


def stored(kaos: Kaos) -> dict:
    return json.loads(credentials_file(kaos).read_text())["contexts"][context_of(kaos.home)]


def rewrite(kaos: Kaos, **changes) -> None:
    """Change the kept login as time would (an expiry passed), keeping the file's mode."""
    path = credentials_file(kaos)
    data = json.loads(path.read_text())
    data["contexts"][context_of(kaos.home)].update(changes)
    path.write_text(json.dumps(data))


class Login:
    """`kaos login ... --no-browser` running in the background; ``url`` is the URL it printed."""

    def __init__(self, kaos: Kaos, *args: str):
        self.process = subprocess.Popen(
            [shutil.which("kaos", path=kaos.env["PATH"]), "login", "--no-browser", "--timeout", "120", *args], env=kaos.env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
        self.printed: list[str] = []
        self.url = wait_until(self._url, 60, interval=0.05, what="kaos login to print the sign-in URL")

    def _url(self) -> str | None:
        line = self.process.stdout.readline()  # blocks until a line, or "" at the end
        if not line and self.process.poll() is not None:
            raise AssertionError(f"kaos login ended early: {self.printed} {self.process.stderr.read()}")
        self.printed.append(line)
        return line.strip() if line.strip().startswith("http") else None

    def finish(self) -> tuple[int, str, str]:
        out, err = self.process.communicate(timeout=60)
        return self.process.returncode, "".join(self.printed) + out, err


def login_as(kaos: Kaos, hydra, client_id: str, user: str | None) -> tuple[int, str, str, httpx.Response]:
    login = Login(kaos, "--issuer", hydra.issuer, "--client-id", client_id, "--audience", AUDIENCE)
    callback = hydra.sign_in(login.url, user)
    return (*login.finish(), callback)


def test_without_login_the_agent_wants_a_token(kaos):
    refused = kaos.kaos("chat", "guarded", "hello")
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "needs a valid token (HTTP 401" in refused.stderr and "run `kaos login`" in refused.stderr, refused.stderr


def test_login_keeps_the_token_0600_and_chat_goes_as_that_user(kaos, hydra, client_id):
    code, out, err, callback = login_as(kaos, hydra, client_id, "bob")
    assert callback.status_code == 200 and "Signed in" in callback.text
    assert code == 0, err
    assert f"signed in to {hydra.issuer} as bob" in out and "refreshed when it expires" in out
    path = credentials_file(kaos)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    kept = stored(kaos)
    assert kept["issuer"] == hydra.issuer and kept["client_id"] == client_id and kept["subject"] == "bob"
    assert kept["access_token"] and kept["refresh_token"] and kept["audience"] == AUDIENCE
    chat = kaos.kaos("chat", "guarded", "hello")
    assert chat.returncode == 0, chat.stderr
    assert chat.stdout.strip() == ANSWER

    code, out, err, _ = login_as(kaos, hydra, client_id, "carol")  # the issuer and client remembered
    assert code == 0 and "as carol" in out, err
    refused = kaos.kaos("chat", "guarded", "hello")
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "user:carol may not chat on agent guarded" in refused.stderr, refused.stderr


def test_an_expired_token_is_refreshed_or_the_cli_says_to_log_in(kaos, hydra, client_id):
    assert login_as(kaos, hydra, client_id, "bob")[0] == 0
    before = stored(kaos)
    rewrite(kaos, expires_at=1.0)
    chat = kaos.kaos("chat", "guarded", "hello")
    assert chat.returncode == 0 and chat.stdout.strip() == ANSWER, chat.stderr
    after = stored(kaos)
    assert after["access_token"] != before["access_token"] and after["expires_at"] > before["expires_at"] - 60
    assert stat.S_IMODE(credentials_file(kaos).stat().st_mode) == 0o600
    rewrite(kaos, expires_at=1.0, refresh_token="")
    for command in (("chat", "guarded", "hello"), ("audit", "guarded"), ("memory", "list", "guarded"),
                    ("approvals", "list")):
        expired = kaos.kaos(*command)
        assert expired.returncode == 1 and "Traceback" not in expired.stderr, (command, expired.stderr)
        assert "has expired and has no refresh token: run `kaos login`" in expired.stderr, (command, expired.stderr)


def test_approvals_and_audit_send_the_login(kaos, hydra, client_id):
    assert login_as(kaos, hydra, client_id, "alice")[0] == 0  # group approvers: an admin
    trail = kaos.kaos("audit", "guarded", "-o", "json")
    assert trail.returncode == 0, trail.stderr
    events = json.loads(trail.stdout)["events"]
    assert ("call.refused", "user:carol") in [(e["action"], e["user"]) for e in events]
    listed = kaos.kaos("approvals", "list", "-o", "json")
    assert listed.returncode == 0 and json.loads(listed.stdout) == {"approvals": []}, listed.stderr


def test_logout_removes_the_token(kaos, hydra, client_id):
    assert login_as(kaos, hydra, client_id, "bob")[0] == 0
    out = kaos.kaos("logout")
    assert out.returncode == 0 and "signed out" in out.stdout
    assert not credentials_file(kaos).exists()
    assert kaos.kaos("logout").stdout.strip() == "not signed in"
    assert "HTTP 401" in kaos.kaos("chat", "guarded", "hello").stderr


def test_a_refused_login_is_a_clear_error(kaos, hydra, client_id):
    code, out, err, callback = login_as(kaos, hydra, client_id, None)
    assert callback.status_code == 400 and "access_denied" in callback.text
    assert code == 1 and "Traceback" not in err
    assert "the issuer did not sign you in (access_denied: the user said no); login denied or cancelled" in err, err


def test_a_callback_with_another_state_is_refused(kaos, hydra, client_id):
    login = Login(kaos, "--issuer", hydra.issuer, "--client-id", client_id)
    redirect = httpx.URL(login.url).params["redirect_uri"]
    forged = httpx.get(redirect, params={"code": "stolen", "state": "not-this-login"}, timeout=30)
    assert forged.status_code == 400 and "state does not match" in forged.text
    code, _, err = login.finish()
    assert code == 1 and "Traceback" not in err
    assert "the callback's state does not match this login's" in err, err


def test_an_unreachable_issuer_is_a_clear_error(kaos):
    nowhere = f"http://127.0.0.1:{free_port()}"
    failed = kaos.kaos("login", "--no-browser", "--issuer", nowhere)
    assert failed.returncode == 1 and "Traceback" not in failed.stderr
    assert f"the issuer {nowhere} cannot be reached" in failed.stderr, failed.stderr
    assert "kaos login needs --issuer" in Kaos.kaos(_fresh(kaos), "login", "--no-browser").stderr


def _fresh(kaos: Kaos) -> Kaos:
    """The same CLI with an empty config: no remembered issuer."""
    other = object.__new__(Kaos)
    other.env = {**kaos.env, "XDG_CONFIG_HOME": kaos.env["XDG_CONFIG_HOME"] + "-fresh"}
    return other

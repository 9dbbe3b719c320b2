"""MemoryStores under `kaos up`: the control plane resolves their embedding ModelAPI, probes the
store and the embedder in the background (bounded, re-checked) and writes Ready or Degraded with
MemoryDegraded; an Agent naming one runs with the LONG_TERM_MEMORY_* env. The workloads are a
stand-in program (an HTTP server on $PORT that shows its env and answers POST, as an embedder
does); PostgreSQL's side is a real closed port, and a listener answering the protocol's first
byte as PostgreSQL does before authentication."""

import asyncio
import socket
import sys
import textwrap

import httpx
import pytest

from kaos.api import API_VERSION
from kaos.reconcile import Ref
from tests.local.stand_in import running_plane
from tests.support.polling import eventually

STAND_IN = textwrap.dedent(f"""\
    #!{sys.executable}
    import http.server, json, os
    class Handler(http.server.BaseHTTPRequestHandler):
        def answer(self, body):
            body = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        def do_GET(self):
            self.answer({{"env": {{k: v for k, v in os.environ.items() if k.isupper()}}}})
        def do_POST(self):
            self.rfile.read(int(self.headers.get("content-length") or 0))
            self.answer({{"data": [{{"embedding": [0.1, 0.2]}}]}})
        def log_message(self, *args):
            pass
    http.server.ThreadingHTTPServer((os.environ["HOST"], int(os.environ["PORT"])), Handler).serve_forever()
""")

EMBEDDER = {"apiVersion": API_VERSION, "kind": "ModelAPI", "metadata": {"name": "embedder"},
            "spec": {"mode": "Proxy", "proxyConfig": {"models": ["bge-small", "m"]}}}


def memory_store(name="facts", **spec):
    return {"apiVersion": API_VERSION, "kind": "MemoryStore", "metadata": {"name": name},
            "spec": {"models": {"embedding": {"modelAPI": "embedder", "model": "bge-small"}}, **spec}}


def agent(store="facts"):
    return {"apiVersion": API_VERSION, "kind": "Agent", "metadata": {"name": "a"},
            "spec": {"modelAPI": "embedder", "model": "m", "memory": {"store": store}}}


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
async def control(tmp_path):
    # re-checked often (the setting the e2e suite sets too), so that a store coming back is seen quickly
    async with running_plane(tmp_path, STAND_IN, {"KAOS_MEMORY_PROBE_SECONDS": "0.2"}) as plane:
        yield plane


def status(plane, kind, name) -> dict:
    return plane.store.resources.get(Ref(kind, "default", name), {}).get("status") or {}


def agent_env(plane) -> dict:
    port = plane.workloads.ports[Ref("Agent", "default", "a")]
    env = httpx.get(f"http://127.0.0.1:{port}/").json()["env"]
    return {name: value for name, value in env.items() if name.startswith("LONG_TERM_MEMORY_")}


async def test_an_embedded_store_is_ready_and_its_agent_gets_the_sqlite_file(control, tmp_path):
    control.apply([(EMBEDDER, "e.yaml"), (memory_store(), "m.yaml"), (agent(), "a.yaml")])
    await eventually(lambda: status(control, "MemoryStore", "facts").get("phase") == "Ready", timeout=30)
    store = status(control, "MemoryStore", "facts")
    assert {c["type"]: c["status"] for c in store["conditions"]} == {"Ready": "True", "MemoryDegraded": "False"}
    assert store["collection"] == "default-facts"
    assert (tmp_path / "home" / "data" / "memory").is_dir(), "the probe made the folder of the embedded file"
    await eventually(lambda: status(control, "Agent", "a").get("phase") == "Ready", timeout=30)
    embedder_url = status(control, "ModelAPI", "embedder")["endpoint"]
    assert agent_env(control) == {
        "LONG_TERM_MEMORY_ENABLED": "true",
        "LONG_TERM_MEMORY_STORE_URL": f"sqlite://{tmp_path}/home/data/memory/default-facts.db",
        "LONG_TERM_MEMORY_COLLECTION": "default-facts",
        "LONG_TERM_MEMORY_SCOPE": "user",
        "LONG_TERM_MEMORY_EMBEDDING_URL": embedder_url,
        "LONG_TERM_MEMORY_EMBEDDING_MODEL": "bge-small",
        "LONG_TERM_MEMORY_RETENTION_DAYS": "0",
        "LONG_TERM_MEMORY_TOP_K": "5",
    }


async def test_an_agent_waits_for_a_missing_store_then_runs(control):
    control.apply([(EMBEDDER, "e.yaml"), (agent(), "a.yaml")])
    await eventually(lambda: "MemoryStore facts (not found)" in status(control, "Agent", "a").get("message", ""),
                     timeout=30)
    assert status(control, "Agent", "a")["phase"] == "Waiting"
    control.apply([(memory_store(), "m.yaml")])
    await eventually(lambda: status(control, "Agent", "a").get("phase") == "Ready", timeout=30)


async def test_a_store_at_a_closed_port_is_degraded_and_the_agent_still_runs(control):
    port = closed_port()
    external = {"type": "external", "external": {"url": f"postgresql://kaos@127.0.0.1:{port}/kaos"}}
    control.apply([(EMBEDDER, "e.yaml"), (memory_store(storage=external), "m.yaml"), (agent(), "a.yaml")])
    await eventually(lambda: status(control, "MemoryStore", "facts").get("phase") == "Degraded", timeout=30)
    store = status(control, "MemoryStore", "facts")
    degraded = next(c for c in store["conditions"] if c["type"] == "MemoryDegraded")
    assert degraded["status"] == "True"
    assert degraded["message"].startswith(f"store: cannot connect to PostgreSQL at 127.0.0.1:{port}")
    assert "embedder" not in degraded["message"]
    await eventually(lambda: status(control, "Agent", "a").get("phase") == "Ready", timeout=30)
    assert agent_env(control)["LONG_TERM_MEMORY_STORE_URL"] == f"postgresql://kaos@127.0.0.1:{port}/kaos"


async def test_a_store_that_comes_back_is_ready_again_without_a_change(control):
    port = closed_port()
    external = {"type": "external", "external": {"url": f"postgresql://kaos@127.0.0.1:{port}/kaos"}}
    control.apply([(EMBEDDER, "e.yaml"), (memory_store(storage=external), "m.yaml")])
    await eventually(lambda: status(control, "MemoryStore", "facts").get("phase") == "Degraded", timeout=30)

    async def answer_as_postgres(reader, writer):  # the SSLRequest answered "N" (no TLS), as PostgreSQL does
        await reader.readexactly(8)
        writer.write(b"N")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer_as_postgres, "127.0.0.1", port)
    try:
        await eventually(lambda: status(control, "MemoryStore", "facts").get("phase") == "Ready", timeout=30)
    finally:
        server.close()
        await server.wait_closed()


async def test_a_missing_secret_key_is_named(control):
    secret = {"type": "external", "external": {"connectionSecretRef": {"name": "pg", "key": "url"}}}
    control.apply([(EMBEDDER, "e.yaml"), (memory_store(storage=secret), "m.yaml")])
    await eventually(lambda: status(control, "MemoryStore", "facts").get("phase") == "Degraded", timeout=30)
    assert "Secret 'pg' has no key 'url'" in status(control, "MemoryStore", "facts")["message"]


async def test_a_store_waits_for_its_embedding_modelapi(control):
    control.apply([(memory_store(), "m.yaml")])
    await eventually(lambda: status(control, "MemoryStore", "facts").get("phase") == "Waiting", timeout=30)
    assert "ModelAPI embedder (not found)" in status(control, "MemoryStore", "facts")["message"]

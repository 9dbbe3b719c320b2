"""`kaos up` with replicas and Redis: one process per replica behind the workload's port and
the gateway, the replicas-need-shared-memory rule, and the local redis-server.

The first tests run the stand-in program of test_controlplane (fast); the last one runs the
real runtime, two replicas sharing a redis-server that the control plane started itself,
through the real gateway.
"""

import asyncio
import json
import os
import signal
import socket

import httpx
import pytest

from kaos.local.controlplane import ControlPlane
from kaos.local.gateway import Gateway
from kaos.local.redis_server import MISSING
from kaos.local.workloads import local_which
from kaos.reconcile import Ref
from kaos.routes import Route
from kaos.settings import Settings
from tests.local.test_controlplane import MODELAPI, agent, info, phase
from tests.support.polling import eventually
from tests.support.processes import alive

REDIS_OWN = {"backend": "redis", "redis": {"url": {"value": "redis://127.0.0.1:1/0"}}}


def status(plane, name="a") -> dict:
    return plane.store.resources[Ref("Agent", "default", name)].get("status") or {}


def pid_at(port: int) -> int:
    return httpx.get(f"http://127.0.0.1:{port}/").json()["pid"]


async def test_replicas_run_one_process_each_behind_the_gateway_and_the_workload_port(control):
    control.apply([(MODELAPI, "m.yaml"), (agent(replicas=3, memory=REDIS_OWN), "a.yaml")])
    await eventually(lambda: phase(control, "Agent", "a") == "Ready", timeout=60)
    assert (status(control)["replicas"], status(control)["readyReplicas"]) == (3, 3)
    ref = Ref("Agent", "default", "a")
    replicas = control.workloads[ref].supervisor
    ports = [process.port for process in replicas.processes]
    assert len(set(ports)) == 3 and control.workloads.ports[ref] not in ports
    pids = {pid_at(port) for port in ports}
    assert len(pids) == 3 and set(replicas.pids) == pids
    route = Route("default", "Agent", "a", "/")
    assert sorted(control.backend_of(route).port for _ in range(6)) == sorted(ports * 2), "round robin"
    # The workload's own port (its endpoint, what peers are given) spreads connections too.
    # (From a thread: the balancer runs on this test's event loop.)
    assert {(await asyncio.to_thread(info, control, "Agent", "a"))["pid"] for _ in range(6)} == pids
    row = next(row for row in control.deployments() if row["kind"] == "Agent")
    assert (row["replicas"], row["readyReplicas"]) == (3, 3)

    os.kill(pid_at(ports[1]), signal.SIGKILL)  # one replica dies; it is restarted on its port
    await eventually(lambda: replicas.restarts == 1 and replicas.ready_count == 3, timeout=30)
    assert pid_at(ports[1]) not in pids

    control.apply([(agent(replicas=1, memory=REDIS_OWN), "a.yaml")])  # scaled down: one process, own port
    await eventually(lambda: status(control).get("replicas") == 1 and phase(control, "Agent", "a") == "Ready",
                     timeout=60)
    assert (await asyncio.to_thread(info, control, "Agent", "a"))["pid"] not in pids
    await eventually(lambda: not any(alive(pid) for pid in pids), timeout=30)


async def test_replicas_with_local_memory_are_failed_with_the_rule(control):
    control.apply([(MODELAPI, "m.yaml"), (agent(replicas=2), "a.yaml")])
    await eventually(lambda: phase(control, "Agent", "a") == "Failed", timeout=30)
    assert "replicas 2 needs a shared memory backend" in status(control)["message"]
    assert Ref("Agent", "default", "a") not in control.workloads


async def test_redis_memory_without_redis_server_is_failed_naming_what_to_install(control):
    control.workloads.which = lambda name: None if name == "redis-server" else control_program(control)
    control.apply([(MODELAPI, "m.yaml"), (agent(memory={"backend": "redis"}), "a.yaml")])
    await eventually(lambda: phase(control, "Agent", "a") == "Failed", timeout=30)
    message = status(control)["message"]
    assert MISSING in message and "apt-get install redis-server" in message


def control_program(plane) -> str:
    return str(plane.home.parent / "stand-in")


@pytest.fixture
async def real_control(tmp_path):
    settings = Settings.from_env({})
    if local_which("redis-server") is None:
        pytest.fail("redis-server is not installed: run scripts/setup-test (apt-get install redis-server)")
    plane = ControlPlane(tmp_path / "home", settings)
    plane.start()
    yield plane
    await plane.stop()


async def test_two_real_replicas_share_a_local_redis_behind_the_gateway(real_control):
    control = real_control
    replies = [f"answer {index}" for index in range(40)]
    config = {"env": [{"name": "DEBUG_MOCK_RESPONSES", "value": json.dumps(replies)},
                      {"name": "AGENT_LOG_LEVEL", "value": "DEBUG"}]}
    control.apply([(agent("remember", replicas=2, memory={"backend": "redis"}, waitForDependencies=False,
                          config=config), "a.yaml")])
    await eventually(lambda: phase(control, "Agent", "remember") == "Ready", timeout=90)
    ref = Ref("Agent", "default", "remember")
    replicas = control.workloads[ref].supervisor
    assert replicas.count == 2 and control.workloads.redis.ready
    # Ready needs one replica serving; the balancer skips one not ready yet (all 10 went to one under load).
    await eventually(lambda: replicas.ready_count == 2, timeout=60, what="both replicas ready")
    env = replicas.processes[0].env_dict
    assert env["MEMORY_BACKEND"] == "redis" and env["REDIS_URL"] == control.workloads.redis.url
    assert env["MEMORY_KEY_PREFIX"] == "kaos:default:agent:remember"
    gateway = Gateway(control.backend_of)
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=gateway), base_url="http://gw",
                                     timeout=30) as client:
            path = "/default/agent/remember"
            first = await client.post(f"{path}/v1/chat/completions", json={"messages": [{"role": "user", "content": "hi"}]})
            assert first.status_code == 200, first.text
            session = first.json()["session_id"]
            for index in range(9):
                answer = await client.post(f"{path}/v1/chat/completions", headers={"X-Session-ID": session},
                                           json={"messages": [{"role": "user", "content": f"more {index}"}]})
                assert answer.status_code == 200, answer.text
            stored = (await client.get(f"{path}/memory/events", params={"session_id": session})).json()
    finally:
        await gateway.aclose()
    assert stored["total"] == 20
    assert [e["content"] for e in stored["events"] if e["event_type"] == "user_message"] == [
        "hi", *[f"more {index}" for index in range(9)]]
    logs = [control.workloads.log_path("default", "agent-remember"),
            control.workloads.log_path("default", "agent-remember").with_name("agent-remember-1.log")]
    served = [open(log).read().count("POST /v1/chat/completions") for log in logs]
    assert all(count >= 3 for count in served) and sum(served) == 10, served
    redis_pid = control.workloads.redis.supervisor.pid
    port = int(control.workloads.redis.url.rsplit(":", 1)[1].split("/")[0])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(b"KEYS kaos:default:agent:remember:*\r\n")
        keys = sock.recv(4096).decode()
    assert f"kaos:default:agent:remember:session:{session}" in keys
    await control.stop()
    await eventually(lambda: not alive(redis_pid), timeout=15, what="redis-server stopped with the control plane")

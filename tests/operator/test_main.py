"""`python -m kaos.operator`: settings from env, JSON-lines logs, the liveness endpoint."""

import asyncio
import json
import logging
import os
import socket
import subprocess
import sys

import httpx
import kopf

from kaos.operator import handlers
from tests.support.polling import eventually
from tests.support.processes import free_port, spawn


async def wait_answering(service, path: str, timeout: float = 30.0) -> httpx.Response:
    """Poll ``path`` until 200, without blocking the event loop that serves kmock."""
    async with httpx.AsyncClient() as client:

        async def answering() -> httpx.Response | None:
            assert service.process.poll() is None, service.log()
            try:
                response = await client.get(f"{service.url}{path}", timeout=1.0)
            except httpx.HTTPError:
                return None
            return response if response.status_code == 200 else None

        try:
            return await eventually(answering, timeout=timeout, interval=0.1, what=f"a 200 on {path}")
        except AssertionError as error:
            raise AssertionError(f"{error}\n{service.log()}") from None


async def test_operator_process_serves_healthz_and_logs_json_lines(kube, tmp_path):
    port = free_port()
    service = spawn("operator", ["-m", "kaos.operator"], {"KAOS_HEALTH_PORT": port, "KAOS_HEALTH_HOST": "127.0.0.1"},
                    str(tmp_path), port=port)
    try:
        await wait_answering(service, "/healthz")
    finally:
        service.stop()
    lines = [line for line in service.log().splitlines() if line.strip()]
    assert lines, "the operator logged nothing"
    records = [json.loads(line) for line in lines if line.startswith("{")]
    assert len(records) >= len(lines) - 1, f"not JSON lines:\n{service.log()}"  # a shutdown line may be plain
    assert any("KAOS operator" in record.get("message", "") for record in records)


def test_invalid_settings_exit_with_a_message():
    result = subprocess.run(
        [sys.executable, "-m", "kaos.operator"],
        env={"PATH": "/usr/bin:/bin", "KAOS_GATEWAY_ENABLED": "perhaps"},
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 2
    assert "KAOS_GATEWAY_ENABLED" in result.stderr and "Traceback" not in result.stderr


async def test_metrics_port_in_use_exits_with_one_line(kube):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "kaos.operator",
            env={**os.environ, "KAOS_HEALTH_HOST": "127.0.0.1", "KAOS_HEALTH_PORT": str(free_port()),
                 "KAOS_METRICS_PORT": str(port)},
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        try:
            stdout, stderr = await asyncio.wait_for(process.communicate(), 60)  # kmock answers meanwhile
        finally:
            if process.returncode is None:  # it went on running: the port was not reported
                process.kill()
                await process.wait()
    output = (stdout + stderr).decode()
    assert process.returncode != 0, output
    lines = output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in output, output
    assert lines[0].startswith(f"kaos-operator: cannot serve metrics on 127.0.0.1:{port}: "), output


def test_a_deleted_resource_waits_about_a_second_not_a_minute_for_its_timer_to_end(monkeypatch):
    """kopf keeps the finalizer of a resource deleted mid-pass until its timer ends, and looks
    again after ``background.cancellation_polling`` (60 s by default): a `kubectl delete` of a
    Trigger under load timed out at 60 s in CI (tests/cluster/test_triggers.py's teardown)."""
    monkeypatch.setattr(handlers, "backend_factory", lambda settings: None)
    settings = kopf.OperatorSettings()
    handlers.configure(settings=settings, memo=kopf.Memo(), logger=logging.getLogger("test"))
    assert settings.background.cancellation_polling <= 1.0

"""What an agent process imports: only what its configuration uses. Redis's client (redis,
hiredis, its OpenTelemetry metrics and psutil: about 9 MiB of RSS) is imported only by an agent
configured for Redis (MEMORY_BACKEND=redis), not by every agent (benchmarks/long_term_bench.py
--rss-only; docs/memory-long-term.md, "Figures")."""

from __future__ import annotations

import subprocess
import sys

# An agent on the local memory backend, served in process (lifespan included), answers a turn,
# lists its events and its approvals; then which of redis's modules were imported.
_AGENT = """
import json, sys
from fastapi.testclient import TestClient
from kaos_runtime.core.settings import AgentSettings
from kaos_runtime.service.app import create_app

config = AgentSettings.from_env({"AGENT_NAME": "lean", "MODEL_NAME": "x",
                                 "DEBUG_MOCK_RESPONSES": json.dumps(["Noted."])})
with TestClient(create_app(config)) as client:
    reply = client.post("/v1/chat/completions", json={"model": "x", "messages": [{"role": "user", "content": "hi"}]})
    assert reply.status_code == 200, reply.text
    assert client.get("/memory/events").status_code == 200
    assert client.get("/approvals").status_code == 200
print(sorted(name for name in sys.modules if name.split(".")[0] in ("redis", "hiredis")))
"""


def test_an_agent_without_redis_never_imports_redis():
    result = subprocess.run([sys.executable, "-c", _AGENT], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]", result.stdout

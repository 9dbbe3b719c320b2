"""kaos_runtime.clients.model: the pure parts of the model client."""

from __future__ import annotations

import os
import subprocess
import sys

from kaos_runtime.clients.model import openai_base_url


def test_openai_base_url_appends_v1_once():
    assert openai_base_url("http://m:8000/") == "http://m:8000/v1"
    assert openai_base_url("http://m:8000/v1") == "http://m:8000/v1"


# Records LITELLM_LOCAL_MODEL_COST_MAP at the moment litellm's import starts.
_SPY = """
import os, sys
seen = []
class Spy:
    def find_spec(self, name, path=None, target=None):
        if name == "litellm" and not seen:
            seen.append(os.environ.get("LITELLM_LOCAL_MODEL_COST_MAP"))
sys.meta_path.insert(0, Spy())
from kaos_runtime.clients.litellm_chat import import_litellm
import_litellm()
print(seen)
"""


def test_the_runtime_sets_the_local_cost_map_itself_before_importing_litellm():
    """Nothing else sets it for the runtime (not the agent chart, the image or the test
    harness), so a runtime run alone, offline, must not let litellm fetch its cost map."""
    env = {k: v for k, v in os.environ.items() if k != "LITELLM_LOCAL_MODEL_COST_MAP"}
    out = subprocess.run([sys.executable, "-c", _SPY], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "['True']"


# A direct client's whole life (tools offered with MODEL_TOOL_CALLING=auto, a call, a stream),
# then whether litellm was imported.
_DIRECT = """
import asyncio, sys
from kaos_runtime.clients.model import ModelClient
from kaos_runtime.core.settings import AgentSettings

async def main():
    client = ModelClient(AgentSettings.from_env({"MODEL_API_URL": sys.argv[1], "MODEL_NAME": "gpt-4o-mini",
                                                 "MCP_SERVERS": "t", "MCP_SERVER_T_URL": "http://127.0.0.1:9"}))
    await client.load()
    native = await client.native_tool_calling()
    reply = await client.complete([{"role": "user", "content": "one"}])
    pieces = [delta.content async for delta in client.stream([{"role": "user", "content": "two"}])]
    await client.close()
    print(native, reply.content, "".join(pieces), "litellm" in sys.modules)

asyncio.run(main())
"""


def test_the_direct_client_answers_streams_and_guesses_tool_calling_without_importing_litellm(mock_model):
    out = subprocess.run([sys.executable, "-c", _DIRECT, mock_model.url], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "echo:", "one", "echo:", "two", "False"]

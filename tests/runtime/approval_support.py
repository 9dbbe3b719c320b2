"""What the approval tests share: a tool server, scripted replies, waiting for a pending approval."""

from __future__ import annotations

import httpx

from tests.support.polling import wait_until

from .conftest import agent_env

TOOLS = '''
def delete_file(path: str) -> str:
    """Deletes a file (pretend)."""
    return "deleted " + path

def read_file(path: str) -> str:
    """Reads a file (pretend)."""
    return "contents of " + path

def wipe(path: str) -> str:
    """Wipes a disk (pretend); its MCP annotations say it destroys."""
    return "wiped " + path

wipe.mcp_annotations = {"destructiveHint": True}
read_file.mcp_annotations = {"readOnlyHint": True, "destructiveHint": True}
'''


def gated_env(name: str, model, tools_server, **extra) -> dict:
    """An agent whose MCP server ``files`` is ``tools_server``, gating delete_file unless ``extra`` says otherwise."""
    return agent_env(name, model, MODEL_TOOL_CALLING="native", MCP_SERVERS="files",
                     MCP_SERVER_FILES_URL=tools_server.url + "/mcp",
                     **{"TOOL_APPROVAL_REQUIRED": "delete_file", **extra})


def call(name: str, **arguments) -> dict:
    return {"name": name, "arguments": arguments}


def native(*calls: dict, content: str = "") -> dict:
    """A scripted model reply asking for native tool calls."""
    return {"content": content, "tool_calls": list(calls)}


def approvals(agent, headers: dict | None = None, **params) -> list[dict]:
    response = httpx.get(agent.url + "/approvals", params=params, headers=headers, timeout=10)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["total"] == len(body["approvals"])
    return body["approvals"]


def pending(agent, count: int = 1, headers: dict | None = None, timeout: float = 30, **params) -> list[dict]:
    """Wait (bounded) until ``count`` approvals are pending on the agent; return them."""
    return wait_until(lambda: (found := approvals(agent, headers, **params)) and len(found) >= count and found,
                      timeout, what=f"{count} pending approval(s) on {agent.name}")


def decide(agent, approval_id: str, decision: str, reason: str = "", headers: dict | None = None) -> httpx.Response:
    return httpx.post(f"{agent.url}/approvals/{approval_id}", json={"decision": decision, "reason": reason},
                      headers=headers, timeout=10)


def tool_messages(request: dict) -> list[str]:
    return [message["content"] for message in request["messages"] if message["role"] == "tool"]

"""What an agent tells about itself: its card (agent_app.agent_card) and its system prompt (prompts)."""

from __future__ import annotations

from kaos_runtime.agent_app import agent_card
from kaos_runtime.prompts import system_prompt
from kaos_runtime.settings import AgentSettings


def test_card_capabilities():
    config = AgentSettings.from_env({"AGENT_NAME": "c", "PEER_AGENTS": "w", "PEER_AGENT_W_CARD_URL": "http://w/.well-known/agent"})
    card = agent_card(config, "http://c", [])
    assert card["capabilities"] == ["message_processing", "task_execution", "task_delegation"]


def test_prompt_holds_instructions_tools_and_peers():
    prompt = system_prompt("Be brief.", [{"name": "echo", "description": "Echo", "inputSchema": {}}],
                           [{"name": "w", "description": "Worker"}])
    assert "Be brief." in prompt and "```tool_call" in prompt and "- w: Worker" in prompt

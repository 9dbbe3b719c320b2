"""kaos_runtime.core.settings: the environment variables, their defaults and their errors."""

from __future__ import annotations

import pytest

from kaos_runtime.core.settings import (
    AgentSettings,
    ConfigError,
    McpServerSettings,
    MemorySettings,
    ServerSettings,
    env_key,
    peer_base_url,
)


def test_peer_and_mcp_env_names():
    config = AgentSettings.from_env({
        "PEER_AGENTS": "loop-worker-del, other",
        "PEER_AGENT_LOOP_WORKER_DEL_CARD_URL": "http://w:8000/.well-known/agent",
        "PEER_AGENT_OTHER_CARD_URL": "http://o:8000/.well-known/agent.json",
        "MCP_SERVERS": "tools",
        "MCP_SERVER_TOOLS_URL": "http://t:8000/mcp",
    })
    assert [(p.name, p.base_url) for p in config.peers] == [("loop-worker-del", "http://w:8000"), ("other", "http://o:8000")]
    assert config.mcp_servers[0].url == "http://t:8000/mcp" and not config.mcp_servers[0].forward_identity
    forwarding = AgentSettings.from_env({"MCP_SERVERS": "t", "MCP_SERVER_T_URL": "http://t/mcp",
                                         "MCP_SERVER_T_IDENTITY": "forward"})
    assert forwarding.mcp_servers[0].forward_identity
    assert env_key("a-b.c") == "A_B_C"
    assert peer_base_url("http://x/ns/agent/w/.well-known/agent/") == "http://x/ns/agent/w"


@pytest.mark.parametrize("env, variable", [
    ({"PEER_AGENTS": "w"}, "PEER_AGENT_W_CARD_URL"),
    ({"MCP_SERVERS": "t"}, "MCP_SERVER_T_URL"),
    ({"MCP_SERVERS": "t", "MCP_SERVER_T_URL": "http://t/mcp", "MCP_SERVER_T_IDENTITY": "token"}, "MCP_SERVER_T_IDENTITY"),
    ({"AGENTIC_LOOP_MAX_STEPS": "many"}, "AGENTIC_LOOP_MAX_STEPS"),
    ({"AGENTIC_LOOP_MAX_STEPS": "0"}, "AGENTIC_LOOP_MAX_STEPS"),
    ({"MEMORY_ENABLED": "maybe"}, "MEMORY_ENABLED"),
    ({"DEBUG_MOCK_RESPONSES": "[not json"}, "DEBUG_MOCK_RESPONSES"),
    ({"DEBUG_MOCK_RESPONSES": '{"a": 1}'}, "DEBUG_MOCK_RESPONSES"),
    ({"MAX_REQUEST_BODY_BYTES": "-1"}, "MAX_REQUEST_BODY_BYTES"),
    ({"MODEL_CLIENT": "other"}, "MODEL_CLIENT"),
])
def test_config_errors_name_the_variable(env, variable):
    with pytest.raises(ConfigError, match=variable):
        AgentSettings.from_env(env)


def test_errors_are_one_line_naming_each_variable():
    with pytest.raises(ConfigError) as caught:
        AgentSettings.from_env({"AGENTIC_LOOP_MAX_STEPS": "abc", "MODEL_TIMEOUT_SECONDS": "-1"})
    message = str(caught.value)
    assert "\n" not in message
    assert "AGENTIC_LOOP_MAX_STEPS must be an integer, got 'abc'" in message and "MODEL_TIMEOUT_SECONDS" in message


def test_blank_variables_are_unset_and_values_trimmed():
    config = AgentSettings.from_env({"AGENT_NAME": "  ", "AGENTIC_LOOP_MAX_STEPS": " 3 ", "MEMORY_ENABLED": " FALSE ",
                                     "MODEL_CLIENT": " Acompletion ", "DEBUG_MOCK_RESPONSES": " ", "MODEL_NAME": " m "})
    assert (config.name, config.max_steps, config.memory.enabled, config.model_client, config.mock_responses,
            config.model_name) == ("agent", 3, False, "acompletion", None, "m")


def test_model_api_key_falls_back_to_openai_api_key():
    def key(env: dict) -> str:
        return AgentSettings.from_env(env).api_key.get_secret_value()

    assert key({}) == "sk-kaos-no-key"
    assert key({"OPENAI_API_KEY": "o", "MODEL_API_KEY": ""}) == "o"
    assert key({"MODEL_API_KEY": "m", "OPENAI_API_KEY": "o"}) == "m"
    assert "secret-key" not in repr(AgentSettings.from_env({"MODEL_API_KEY": "secret-key"}))


def test_server_and_mcp_server_settings():
    assert ServerSettings.from_env({}) == ServerSettings(host="0.0.0.0", port=8000, log_level="INFO")
    assert ServerSettings.from_env({"LOG_LEVEL": "debug"}).log_level == "DEBUG"
    assert ServerSettings.from_env({"AGENT_LOG_LEVEL": "loud", "LOG_LEVEL": "debug"}).log_level == "INFO"
    for port, problem in (("http", "must be an integer"), ("0", "must be at least 1"), ("70000", "must be at most 65535")):
        with pytest.raises(ConfigError, match=f"PORT {problem}"):
            ServerSettings.from_env({"PORT": port})
    assert McpServerSettings.from_env({"MCP_PATH": " "}) == McpServerSettings(
        tools_source="", server_name="kaos-python-string", path="/mcp")


def test_settings_built_directly_read_no_environment(monkeypatch):
    monkeypatch.setenv("MEMORY_MAX_SESSIONS", "7")
    assert MemorySettings().max_sessions == 1000
    assert AgentSettings().memory.max_sessions == 1000
    assert AgentSettings.from_env().memory.max_sessions == 7


def test_an_empty_environment_gives_the_defaults():
    # The values are the Agent CRD's defaults; a test of the CRD checks that they agree.
    config = AgentSettings.from_env({})
    assert config == AgentSettings() and config.memory == MemorySettings()
    assert (config.peers, config.mcp_servers, config.mock_responses) == ((), (), None)

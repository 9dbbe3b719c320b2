"""What the agent calls out to: the model (OpenAI chat completions; litellm for MODEL_CLIENT=acompletion), MCP servers' tools, peer agents (HTTP and A2A)."""

"""What the agent calls out to: the model (litellm), MCP servers' tools, peer agents (HTTP and A2A)."""

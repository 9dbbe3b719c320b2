"""The wire protocols the agent speaks: OpenAI chat completions, the A2A server, its own MCP server."""

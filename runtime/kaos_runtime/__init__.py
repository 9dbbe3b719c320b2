"""The KAOS agent runtime and python-string MCP server."""

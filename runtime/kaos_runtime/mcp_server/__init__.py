"""`kaos-runtime mcp`: the python-string MCP server."""

"""The agentic loop: model calls, tool calls and delegations (native or fenced), the step gate of a stream."""

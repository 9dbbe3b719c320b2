"""The API keys a bearer-key Secret lists (``spec.auth.apiKeys``): one rule for every server that
checks them, so that one Secret means the same keys to an agent, a python-string MCP server
(``AUTH_API_KEYS``), the llama.cpp engine of ``kaos up`` (``LLAMA_API_KEY``) and the LiteLLM
proxy's custom auth (charts/modelapi/files/kaos_auth.py, which cannot import the runtime:
scripts/generate writes this function into it, and tests/test_generated.py checks it is current).
"""


def parse_api_keys(value: str) -> list[str]:
    """The keys in ``value``, in order: separated by commas or newlines, blanks around each
    stripped, empty entries dropped."""
    return [key.strip() for key in value.replace("\n", ",").split(",") if key.strip()]

"""LiteLLM custom auth for a ModelAPI with proxyConfig.allowMockResponse (KAOS).

LiteLLM drops a client's ``mock_response``/``mock_tool_calls`` unless the caller's key allows it
(``allow_client_mock_response`` in its metadata); a proxy without a database has no such keys,
so this grants it to every caller. When LITELLM_MASTER_KEY is set, that key is still required.
"""

import os

from fastapi import HTTPException
from litellm.proxy._types import UserAPIKeyAuth


async def user_api_key_auth(request, api_key: str) -> UserAPIKeyAuth:
    master = os.environ.get("LITELLM_MASTER_KEY") or ""
    given = (api_key or "").removeprefix("Bearer ").strip()
    if master and given != master:
        raise HTTPException(status_code=401, detail="invalid API key")
    return UserAPIKeyAuth(api_key=given or None, metadata={"allow_client_mock_response": True})

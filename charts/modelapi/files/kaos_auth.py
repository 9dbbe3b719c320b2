"""LiteLLM custom auth of a KAOS ModelAPI in Proxy mode (mounted beside config.yaml).

- ``AUTH_API_KEYS`` set (the ModelAPI's spec.auth.apiKeys, read from a Secret; comma or newline
  separated: ``parse_api_keys``, the runtime's one rule, written here by scripts/generate): a
  request needs ``Authorization: Bearer <one of the keys>``. A missing or wrong key gets 401 with ``WWW-Authenticate: Bearer realm="kaos"`` (and ``error="invalid_token"`` for a
  wrong one), as an agent answers. Keys are compared in constant time; the caller is named by
  the key's place in the list (``key:1``, ...), never by the key, which no answer or log holds.
- Without it, ``LITELLM_MASTER_KEY`` is required when set; else every caller is let in.
- ``KAOS_ALLOW_MOCK_RESPONSE=true`` (proxyConfig.allowMockResponse): a client's ``mock_response``
  is answered by LiteLLM's mock (LiteLLM drops it unless the caller's key allows it, and a proxy
  without a database has no such keys).

LiteLLM's health probes (/health/liveliness, /health/readiness) do not ask this module.
"""

import hmac
import os

from litellm.proxy._types import ProxyException, UserAPIKeyAuth

REALM = 'Bearer realm="kaos"'


# BEGIN parse_api_keys: written by scripts/generate from kaos_runtime/core/api_keys.py; do not edit.
def parse_api_keys(value: str) -> list[str]:
    """The keys in ``value``, in order: separated by commas or newlines, blanks around each
    stripped, empty entries dropped."""
    return [key.strip() for key in value.replace("\n", ",").split(",") if key.strip()]
# END parse_api_keys


def _accepted_keys() -> list[bytes]:
    keys = os.environ.get("AUTH_API_KEYS") or os.environ.get("LITELLM_MASTER_KEY") or ""
    return [key.encode() for key in parse_api_keys(keys)]


def _refused(challenge: str, message: str) -> ProxyException:
    return ProxyException(message=message, type="auth_error", param="None", code=401,
                          headers={"WWW-Authenticate": challenge})


def _token(api_key) -> str:
    given = (api_key or "").strip()
    scheme, _, rest = given.partition(" ")
    return rest.strip() if scheme.lower() == "bearer" else given


async def user_api_key_auth(request, api_key: str) -> UserAPIKeyAuth:
    keys = _accepted_keys()
    metadata = {"allow_client_mock_response": True} if os.environ.get("KAOS_ALLOW_MOCK_RESPONSE") == "true" else {}
    if not keys:
        return UserAPIKeyAuth(metadata=metadata)
    token = _token(api_key)
    if not token:
        raise _refused(REALM, "authentication required: send Authorization: Bearer <key>")
    matched = None
    for number, key in enumerate(keys, start=1):  # every key compared, in constant time each
        if hmac.compare_digest(token.encode(), key) and matched is None:
            matched = number
    if matched is None:
        raise _refused(f'{REALM}, error="invalid_token", error_description="the token is not valid"',
                       "the token is not valid")
    return UserAPIKeyAuth(key_alias=f"key:{matched}", metadata=metadata)

"""The JSON response every route of the service answers with (compact, encoded once)."""

from __future__ import annotations

import json

from fastapi.responses import Response


def json_response(payload, status: int = 200, headers: dict | None = None) -> Response:
    body = json.dumps(payload, separators=(",", ":")).encode()
    return Response(body, status_code=status, media_type="application/json", headers=headers)

"""Times as a Trigger's status writes them: RFC 3339 in UTC to the second, as Kubernetes does."""

from __future__ import annotations

from datetime import datetime, timezone


def timestamp(instant: datetime) -> str:
    """RFC 3339 in UTC to the second, as Kubernetes writes times."""
    return instant.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(timezone.utc)

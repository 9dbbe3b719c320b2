"""A Trigger's spec as the control planes use it, with the checks its CRD schema cannot make.

The CRD schema (charts/kaos/crds/trigger.yaml) validates the shape and applies the defaults,
in the API server and in ``kaos.crds``; ``trigger_spec`` takes such a validated resource and
raises ``TriggerSpecError`` for what only code can check (a cron expression, a time zone, the
message's placeholders); the CRD's rules (exactly one of schedule or webhook, a time zone only
with a schedule) are the CRD's alone. A Trigger that fails here is Failed, with the message, like an Agent
whose model its ModelAPI does not offer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

from kaos.api import SecretKey, secret_key
from kaos.triggers.message import MessageError, check
from kaos.triggers.runs import DEFAULT_HISTORY_LIMIT, DEFAULT_MAX_CONCURRENT_RUNS, FORBID, NEW_SESSION
from kaos.triggers.schedule import Schedule, ScheduleError

DURATION = re.compile(r"([0-9]+)(ms|h|m|s)")
UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
DEFAULT_TIMEOUT_SECONDS = 600.0
DEFAULT_STARTING_DEADLINE_SECONDS = 3600


class TriggerSpecError(ValueError):
    """A Trigger that cannot run as written; the message names the field."""


@dataclass(frozen=True)
class Limits:
    timeout: float = DEFAULT_TIMEOUT_SECONDS
    max_steps: int | None = None
    max_tokens: int | None = None
    max_concurrent_runs: int = DEFAULT_MAX_CONCURRENT_RUNS  # runs at once with concurrencyPolicy Allow


@dataclass(frozen=True)
class TriggerSpec:
    name: str  # the Trigger's (its namespace is its Ref's)
    agent: str
    message: str
    schedule: Schedule | None
    webhook: SecretKey | None
    session: str = NEW_SESSION
    credentials: SecretKey | None = None  # the bearer token runs send, for an agent with spec.auth
    concurrency: str = FORBID
    suspend: bool = False
    limits: Limits = Limits()
    history_limit: int = DEFAULT_HISTORY_LIMIT
    starting_deadline: float = DEFAULT_STARTING_DEADLINE_SECONDS

    @property
    def caller(self) -> str:
        """Who the agent sees calling: budgets count the run against this identity."""
        return f"trigger:{self.name}"


def seconds(duration: str) -> float:
    """``5m``, ``1h30m``, ``90s``, ``500ms`` in seconds (the CRD's duration pattern)."""
    if not duration or DURATION.sub("", duration):
        raise TriggerSpecError(f"{duration!r} is not a duration such as 90s, 5m or 1h30m")
    return sum(int(n) * UNIT_SECONDS[unit] for n, unit in DURATION.findall(duration))


def trigger_spec(resource: Mapping[str, Any]) -> TriggerSpec:
    """The spec of a validated Trigger (CRD defaults applied)."""
    metadata = resource.get("metadata") or {}
    spec = resource.get("spec") or {}
    schedule = None
    if spec.get("schedule"):  # the CRD's rules: exactly one of schedule or webhook, a timeZone only with a schedule
        try:
            schedule = Schedule(spec["schedule"], spec.get("timeZone") or "UTC")
        except ScheduleError as error:
            raise TriggerSpecError(str(error)) from None
    webhook = secret_key((spec.get("webhook") or {}).get("secretRef"))
    credentials = secret_key((spec.get("credentials") or {}).get("secretKeyRef"))
    try:
        check(spec["message"])
    except MessageError as error:
        raise TriggerSpecError(str(error)) from None
    limits = spec.get("limits") or {}
    try:
        timeout = seconds(limits["timeout"]) if limits.get("timeout") else DEFAULT_TIMEOUT_SECONDS
    except TriggerSpecError as error:
        raise TriggerSpecError(f"limits.timeout: {error}") from None
    if timeout <= 0:
        raise TriggerSpecError("limits.timeout: must be longer than 0s")
    return TriggerSpec(
        name=metadata["name"],
        agent=spec["agent"],
        message=spec["message"],
        schedule=schedule,
        webhook=webhook,
        session=spec.get("session") or NEW_SESSION,
        credentials=credentials,
        concurrency=spec.get("concurrencyPolicy") or FORBID,
        suspend=bool(spec.get("suspend")),
        limits=Limits(timeout, limits.get("maxSteps"), limits.get("maxTokens"),
                      int(limits.get("maxConcurrentRuns") or DEFAULT_MAX_CONCURRENT_RUNS)),
        history_limit=int(spec.get("historyLimit") or DEFAULT_HISTORY_LIMIT),
        starting_deadline=float(spec.get("startingDeadlineSeconds") or DEFAULT_STARTING_DEADLINE_SECONDS),
    )


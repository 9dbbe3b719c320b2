"""The operator's small pure parts: backoff, the index keys, the timer log filter."""

import logging

import pytest

from kaos.operator.backoff import Backoff
from kaos.operator.handlers import QuietTimers
from kaos.operator.world import World, deployment_key, replica_counts
from kaos.reconcile import Ref


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_backoff_doubles_up_to_the_cap_and_resets_on_success():
    clock = Clock()
    backoff = Backoff(base=1.0, cap=5.0, clock=clock)
    assert [backoff.fail("a") for _ in range(5)] == [1.0, 2.0, 4.0, 5.0, 5.0]
    assert backoff.blocked("a") and not backoff.blocked("b")
    clock.now += 5.0
    assert not backoff.blocked("a")
    backoff.succeed("a")
    assert backoff.fail("a") == 1.0


@pytest.mark.parametrize(
    "labels, key",
    [
        ({"app.kubernetes.io/name": "agent", "kaos.tools/agent": "coord"}, Ref("Agent", "ns", "coord")),
        ({"app.kubernetes.io/name": "modelapi", "kaos.tools/modelapi": "llm"}, Ref("ModelAPI", "ns", "llm")),
        ({"app.kubernetes.io/name": "mcpserver", "kaos.tools/mcpserver": "t"}, Ref("MCPServer", "ns", "t")),
        ({"app.kubernetes.io/name": "agent"}, None),
        ({"app.kubernetes.io/name": "other", "kaos.tools/other": "x"}, None),
    ],
)
def test_deployment_key_comes_from_the_chart_labels(labels, key):
    assert deployment_key({"metadata": {"namespace": "ns", "labels": labels}}) == key


def test_replica_counts_and_world_lookups():
    assert replica_counts({"status": {"replicas": 2, "readyReplicas": 1}}) == (1, 2)
    assert replica_counts({}) == (0, 0)
    ref = Ref("Agent", "ns", "a")
    deleting = {"metadata": {"name": "a", "deletionTimestamp": "2026-01-01T00:00:00Z"}}
    world = World({ref: [deleting]}, {}, {}, {ref: [(1, 1)]})
    assert world.get(ref) is None, "an object being deleted counts as gone"
    assert world.get(Ref("ModelAPI", "ns", "x")) is None
    assert world.replicas(ref) == (1, 1) and world.replicas(Ref("Agent", "ns", "b")) == (None, None)


def test_quiet_timers_drops_only_the_timer_success_line():
    quiet = QuietTimers()
    record = lambda message: logging.LogRecord("kopf.objects", logging.INFO, "", 0, message, (), None)  # noqa: E731
    assert not quiet.filter(record("Timer 'resync' succeeded."))
    assert quiet.filter(record("Handler 'reconcile' succeeded."))
    assert quiet.filter(record("Timer 'resync' failed with an exception."))

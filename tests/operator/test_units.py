"""The operator's small parts: backoff, the index keys, the timer log filter, one reconcile racing another."""

import copy
import logging

import kopf
import pytest

from kaos.api import API_VERSION, FINALIZER
from kaos.operator.backoff import Backoff
from kaos.operator.handlers import QuietTimers
from kaos.operator.reconciler import OperatorState, reconcile
from kaos.operator.world import World, deployment_key, replica_counts
from kaos.reconcile import Ref
from kaos.settings import Settings


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


async def test_a_reconcile_racing_another_on_the_same_inputs_writes_no_status_again():
    """The resync timer's first tick and the creation handler both reconcile a new object, the
    second with a body taken before the first one's status patch reached the API: the status
    is diffed against what the first one wrote, so the second writes none (no duplicate write,
    lastTransitionTime kept); a status or annotation write alone is not an input."""
    class Backend:
        async def uninstall(self, release, namespace):  # an MCPServer with url has no release
            pass

    async def discover(url):
        return ["echo"]

    settings = Settings()
    state = OperatorState(settings=settings, backend=Backend(), backoff=Backoff(), discover_tools=discover)
    world = World({}, {}, {}, {})
    logger = logging.getLogger("test")
    created = {
        "apiVersion": API_VERSION, "kind": "MCPServer",
        "metadata": {"name": "remote", "namespace": "team", "uid": "u1", "generation": 1, "resourceVersion": "1"},
        "spec": {"runtime": "custom", "url": "http://127.0.0.1:1/mcp"},
    }
    with_finalizer = copy.deepcopy(created)
    with_finalizer["metadata"].update(resourceVersion="2", finalizers=[FINALIZER])

    async def run(body, force):
        patch = kopf.Patch()
        await reconcile(body, world=world, state=state, patch=patch, logger=logger, force=force)
        return dict(patch.get("status") or {})

    written = await run(created, force=False)  # the timer's first tick
    assert written["ready"] is True and written["tools"] == ["echo"]
    assert await run(with_finalizer, force=True) == {}, "the creation handler rewrote the status"

    handled = copy.deepcopy(with_finalizer)  # the echo of kopf's annotations, before the status
    handled["metadata"].update(resourceVersion="4", annotations={"kaos.tools/last-handled-configuration": "{}"})
    assert await run(handled, force=False) == {}

    changed = copy.deepcopy(handled)
    changed["metadata"].update(resourceVersion="5", generation=2)
    changed["status"] = written
    assert await run(changed, force=False) == {"observedGeneration": 2}

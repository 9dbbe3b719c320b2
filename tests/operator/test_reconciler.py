"""One reconcile of one resource (kaos.operator.reconciler), without kopf's machinery around it."""

import copy
import logging

import kopf

from kaos.api import API_VERSION, FINALIZER, MODELAPI
from kaos.backoff import Backoff
from kaos.mcp_discovery import ToolDiscovery
from kaos.operator.reconciler import OperatorState, reconcile
from kaos.operator.world import World
from kaos.reconcile import Ref
from kaos.settings import Settings


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
    state = OperatorState(settings=settings, backend=Backend(), backoff=Backoff(), tools=ToolDiscovery(list_tools=discover))
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


async def test_a_status_put_back_by_a_late_patch_is_written_again_on_the_next_ticks():
    """kopf applies a handler's patch after the handler returns: the creation handler's patch
    (0/1 replicas ready) can land after the timer's newer one (Ready), and no input changes
    again. A tick that sees another status than the one last written waits one more tick (a
    body taken before our own patch arrived differs too, for a moment); the second one writes
    the status again."""
    class Backend:
        async def deployed_revision(self, chart, release, namespace, values):
            return None

        async def apply(self, chart, release, namespace, values):
            return 1

    state = OperatorState(settings=Settings(), backend=Backend(), backoff=Backoff())
    ref = Ref(MODELAPI, "team", "llm")
    resource = {
        "apiVersion": API_VERSION, "kind": MODELAPI,
        "metadata": {"name": "llm", "namespace": "team", "uid": "u1", "generation": 1, "resourceVersion": "1"},
        "spec": {"mode": "Proxy", "proxyConfig": {"models": ["gpt-4o-mini"]}},
    }
    logger = logging.getLogger("test")

    async def run(body, world, force=False):
        patch = kopf.Patch()
        await reconcile(body, world=world, state=state, patch=patch, logger=logger, force=force)
        return dict(patch.get("status") or {})

    pending = await run(resource, World({}, {}, {}, {ref: [(0, 1)]}), force=True)
    assert pending["phase"] == "Pending"
    ready_world = World({}, {}, {}, {ref: [(1, 1)]})
    ready = await run({**resource, "status": pending}, ready_world)
    assert ready["phase"] == "Ready"
    put_back = {**resource, "status": pending}  # the creation handler's patch landed last
    assert await run(put_back, ready_world) == {}, "the first tick waits: it may be a body lagging behind"
    again = await run(put_back, ready_world)
    assert again["phase"] == "Ready" and again["ready"] is True
    assert await run({**resource, "status": {**pending, **again}}, ready_world) == {}

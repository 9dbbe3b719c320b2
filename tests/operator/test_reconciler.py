"""The change handlers and the resync timer of one resource (kaos.operator.handlers, with the
converge of kaos.operator.reconciler and the one status writer, kaos.operator.status), called
as kopf calls them, without kopf's machinery around them."""

import copy
import logging

import kopf
import pytest

from kaos import crds
from kaos.api import API_VERSION, FINALIZER, MODELAPI
from kaos.backoff import Backoff
from kaos.helm import HelmError
from kaos.mcp_discovery import ToolDiscovery
from kaos.operator.handlers import LAST_HANDLED, on_change, on_rendered_event, on_resync
from kaos.operator.reconciler import OperatorState, plan_for
from kaos.operator.world import World
from kaos.reconcile import DEPLOY, Ref
from kaos.settings import Settings

LOGGER = logging.getLogger("test")
LLM_REF = Ref(MODELAPI, "team", "llm")
LLM = {
    "apiVersion": API_VERSION, "kind": MODELAPI,
    "metadata": {"name": "llm", "namespace": "team", "uid": "u1", "generation": 1, "resourceVersion": "1"},
    "spec": {"mode": "Proxy", "proxyConfig": {"models": ["gpt-4o-mini"]}},
}


def call(state: OperatorState, deployments: dict | None = None):
    """handler(body) -> the status kopf would patch, with the indices holding ``deployments``."""
    memo = kopf.Memo()
    memo.kaos = state
    indices = {"agent_index": {}, "modelapi_index": {}, "mcpserver_index": {}, "deployment_index": {} if deployments is None else deployments}

    async def run(handler, body):
        patch = kopf.Patch()
        await handler(body=body, patch=patch, memo=memo, logger=LOGGER, **indices)
        assert set(patch) <= {"status"}, f"{handler.__name__} patched {dict(patch)}"
        return dict(patch.get("status") or {})

    return run


class NoReleaseYet:
    """A helm backend on which no release is deployed yet: each apply is recorded in ``applied``
    and answers the next revision."""

    def __init__(self) -> None:
        self.applied: list[str] = []

    async def deployed_revision(self, chart, release, namespace, values):
        return None

    async def apply(self, chart, release, namespace, values):
        self.applied.append(release)
        return len(self.applied)


async def test_a_reconcile_racing_another_on_the_same_inputs_writes_no_status_again():
    """The resync timer's first tick and the creation handler both converge a new object, the
    second with a body taken before the first one's status patch reached the API: the handler
    writes no status (no duplicate write) and the next tick, on the live body, none either
    (lastTransitionTime kept); a status or annotation write alone is not an input."""
    class Backend:
        async def uninstall(self, release, namespace):  # an MCPServer with url has no release
            pass

    async def discover(url):
        return ["echo"]

    state = OperatorState(settings=Settings(), backend=Backend(), backoff=Backoff(), tools=ToolDiscovery(list_tools=discover))
    run = call(state)
    created = {
        "apiVersion": API_VERSION, "kind": "MCPServer",
        "metadata": {"name": "remote", "namespace": "team", "uid": "u1", "generation": 1, "resourceVersion": "1"},
        "spec": {"runtime": "custom", "url": "http://127.0.0.1:1/mcp"},
    }
    with_finalizer = copy.deepcopy(created)
    with_finalizer["metadata"].update(resourceVersion="2", finalizers=[FINALIZER])

    written = await run(on_resync, created)  # the timer's first tick
    assert written["ready"] is True and written["tools"] == ["echo"]
    assert await run(on_change, with_finalizer) == {}, "the creation handler rewrote the status"

    handled = copy.deepcopy(with_finalizer)  # kopf's annotations, after the timer's status
    handled["metadata"].update(resourceVersion="4", annotations={"kaos.tools/last-handled-configuration": "{}"})
    handled["status"] = written
    assert await run(on_resync, handled) == {}

    changed = copy.deepcopy(handled)
    changed["metadata"].update(resourceVersion="5", generation=2)
    assert await run(on_resync, changed) == {"observedGeneration": 2}


async def test_the_handlers_patch_no_status_and_the_timer_alone_brings_it_to_the_live_object():
    """kopf applies a handler's patch after the handler returns, so a creation handler's status
    (0/1 replicas ready) could land after the timer's newer one (Ready), for good, since no input
    changes again. The change handlers write no status: each tick of the timer compares the
    status the last outcome means with the live one, so a status put back by anyone is written
    again on the next tick, and a live status that is right is left alone."""
    class Backend:
        async def deployed_revision(self, chart, release, namespace, values):
            return None

        async def apply(self, chart, release, namespace, values):
            return 1

    state = OperatorState(settings=Settings(), backend=Backend(), backoff=Backoff())
    ref, resource = LLM_REF, copy.deepcopy(LLM)
    starting, ready_world = call(state, {ref: [(0, 1)]}), call(state, {ref: [(1, 1)]})

    assert await starting(on_change, resource) == {}, "the creation handler wrote status"
    assert state.records[ref].outcome is not None, "the handler recorded its outcome"
    pending = await starting(on_resync, resource)
    assert pending["phase"] == "Pending"
    ready = await ready_world(on_resync, {**resource, "status": pending})
    assert ready["phase"] == "Ready"
    put_back = {**resource, "status": pending}  # another writer put the older status back
    again = await ready_world(on_resync, put_back)
    assert again["phase"] == "Ready" and again["ready"] is True
    assert await ready_world(on_resync, {**resource, "status": {**pending, **again}}) == {}


async def test_a_deployment_deleted_right_after_the_status_said_ready_is_applied_again():
    """The tick that applies the release writes a Ready status from a Deployment that appeared
    while helm ran, which the converge of that tick never saw; if the Deployment is deleted
    before the next tick, nothing the converge reads has changed since, yet the release must
    be applied again."""
    ref, resource = LLM_REF, copy.deepcopy(LLM)
    deployments: dict = {}

    class AppearsDuringHelm(NoReleaseYet):
        async def apply(self, chart, release, namespace, values):
            deployments[ref] = [(1, 1)]
            return await super().apply(chart, release, namespace, values)

    backend = AppearsDuringHelm()
    applied = backend.applied
    state = OperatorState(settings=Settings(), backend=backend, backoff=Backoff())
    run = call(state, deployments)
    ready = await run(on_resync, resource)
    assert ready["phase"] == "Ready" and applied == ["modelapi-llm"]
    deployments.clear()  # kubectl delete deployment, before the next tick
    await run(on_resync, {**resource, "status": ready})
    assert applied == ["modelapi-llm", "modelapi-llm"], "the vanished Deployment was not applied again"


async def test_a_failed_reapply_of_a_vanished_deployment_is_retried_with_helm_not_taken_from_its_records():
    """helm's records still say the release is deployed with these values after its Deployment
    was deleted; a re-apply that fails is retried as an apply, not settled by those records."""
    calls = []

    class Backend:
        async def deployed_revision(self, chart, release, namespace, values):
            calls.append("status")
            return 1

        async def apply(self, chart, release, namespace, values):
            calls.append("apply")
            if calls.count("apply") == 1:
                raise HelmError("the apiserver went away")
            return 2

    state = OperatorState(settings=Settings(), backend=Backend(), backoff=Backoff(base=0.0))
    deployments = {LLM_REF: [(1, 1)]}
    run = call(state, deployments)
    handled = copy.deepcopy(LLM)  # handled by a change handler before the restart (kopf's annotation)
    handled["metadata"]["annotations"] = {LAST_HANDLED: "{}"}
    await run(on_resync, copy.deepcopy(handled))
    assert calls == ["status"], "the first converge took the deployed release as it is"
    deployments.clear()
    failed = await run(on_resync, copy.deepcopy(handled))
    assert calls == ["status", "apply"] and failed["phase"] == "Failed", failed
    await run(on_resync, copy.deepcopy(handled))
    assert calls == ["status", "apply", "apply"]


async def test_a_resource_whose_namespace_is_no_rfc1123_label_is_failed_and_never_installed():
    """The API server enforces names; the operator's plan trusts none it did not check."""
    calls = []

    class Backend:
        async def deployed_revision(self, chart, release, namespace, values):
            calls.append(("status", namespace))

        async def apply(self, chart, release, namespace, values):
            calls.append(("apply", namespace))
            return 1

        async def uninstall(self, release, namespace):
            calls.append(("uninstall", namespace))

    state = OperatorState(settings=Settings(), backend=Backend(), backoff=Backoff())
    resource = copy.deepcopy(LLM)
    resource["metadata"]["namespace"] = "../../team"
    status = await call(state)(on_resync, resource)
    assert status["phase"] == "Failed", status
    assert "metadata.namespace: '../../team' is not an RFC 1123 label" in status["message"]
    assert not [call for call in calls if call[0] in ("status", "apply")], calls


async def test_a_created_resource_gets_one_helm_run_not_a_status_check_first():
    """A resource kopf's creation handler sees has no release to compare with: helm upgrade
    --install at once (the check of the deployed revision is for a restart)."""
    calls = []

    class Backend:
        async def deployed_revision(self, chart, release, namespace, values):
            calls.append("status")

        async def apply(self, chart, release, namespace, values):
            calls.append("apply")
            return 1

    state = OperatorState(settings=Settings(), backend=Backend(), backoff=Backoff())
    memo = kopf.Memo()
    memo.kaos = state
    indices = {"agent_index": {}, "modelapi_index": {}, "mcpserver_index": {}, "deployment_index": {}}
    await on_change(body=copy.deepcopy(LLM), memo=memo, logger=LOGGER, reason=kopf.Reason.CREATE, **indices)
    assert calls == ["apply"]
    await on_resync(body=copy.deepcopy(LLM), patch=kopf.Patch(), memo=memo, logger=LOGGER, **indices)
    assert calls == ["apply"], "the status pass ran helm again for the same generation"


def test_a_field_newer_than_the_operators_crds_does_not_fail_the_resource():
    """In a cluster the API server has checked a resource against the installed CRD, which a
    platform upgrade makes newer than the operator's copy (tests/realcluster/test_upgrade.py):
    the operator lets a field it does not know through; `kaos up`, with no API server, still
    refuses it as kubectl's strict validation does."""
    newer = copy.deepcopy(LLM)
    newer["spec"]["owner"] = "team-a"
    _, planned = plan_for(newer, World({}, {}, {}, {}), Settings())
    assert planned.phase == DEPLOY and planned.values is not None, planned.message
    with pytest.raises(crds.ValidationError, match="spec.owner: unknown field"):
        crds.validate(newer)


async def test_an_object_of_the_release_deleted_or_edited_by_hand_is_compared_with_the_manifest_once():
    """A watch event of an object of the release (kaos.operator.drift): helm's own write wakes
    nothing; a deletion or a hand edit costs one read of the manifest, and an apply only when the
    object lacks something of it; the apply's own events start nothing again."""
    manifests = []
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "modelapi-llm", "namespace": "team", "labels": {
        "app.kubernetes.io/name": "modelapi", "kaos.tools/modelapi": "llm"}}, "spec": {"type": "ClusterIP"}}

    class Backend(NoReleaseYet):
        async def manifest(self, release, namespace):
            manifests.append(release)
            return [service]

    backend = Backend()
    applied = backend.applied
    state = OperatorState(settings=Settings(), backend=backend, backoff=Backoff())
    memo = kopf.Memo()
    memo.kaos = state
    indices = {"agent_index": {}, "modelapi_index": {LLM_REF: [LLM]}, "mcpserver_index": {},
               "deployment_index": {LLM_REF: [(1, 1)]}}
    run = call(state, indices["deployment_index"])
    ready = await run(on_resync, copy.deepcopy(LLM))
    assert applied == ["modelapi-llm"]

    def written(manager: str, second: int, spec: dict) -> dict:
        return {**service, "spec": spec, "metadata": {**service["metadata"], "managedFields": [
            {"manager": "helm", "time": "2026-01-01T00:00:01Z"},
            {"manager": manager, "time": f"2026-01-01T00:00:0{second}Z"}]}}

    async def event(kind: str, body: dict) -> None:
        await on_rendered_event(body=body, type=kind, memo=memo, logger=LOGGER, **indices)
        await run(on_resync, {**LLM, "status": ready})

    await event("MODIFIED", written("helm", 1, {"type": "ClusterIP"}))  # helm's own write
    assert (manifests, applied) == ([], ["modelapi-llm"])
    await event("MODIFIED", written("kubectl-annotate", 2, {"type": "ClusterIP"}))  # a hand edit beside helm's fields
    assert (manifests, applied) == (["modelapi-llm"], ["modelapi-llm"])
    await event("MODIFIED", written("kubectl-edit", 3, {"type": "NodePort"}))  # a field helm set
    assert (len(manifests), applied) == (2, ["modelapi-llm"] * 2)
    await event("DELETED", written("kubectl-edit", 3, {"type": "NodePort"}))
    assert (len(manifests), applied) == (3, ["modelapi-llm"] * 3)
    await event("ADDED", written("helm", 4, {"type": "ClusterIP"}))  # the repair's own write
    assert (len(manifests), applied) == (3, ["modelapi-llm"] * 3)

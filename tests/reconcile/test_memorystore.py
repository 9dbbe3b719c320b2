"""The MemoryStore kind in the reconcile core: its spec view, its status from a probe, and an
Agent's spec.memory.store resolved into the agent chart's longTermMemory values (pure)."""

import pytest

from kaos import crds
from kaos.reconcile import DEPLOY, WAITING, Ref, dependencies, plan
from kaos.reconcile.memorystore import (
    DEGRADED,
    FAILED,
    PENDING,
    READY,
    Probe,
    memory_store_spec,
    memory_store_status,
    probe_target,
    resolve,
)
from kaos.settings import Settings
from tests.reconcile.builders import NS, SPEC_SCHEMAS, agent, endpoint_of, meta, modelapi

SETTINGS = Settings()


def store(name="facts", status=None, **spec):
    body = {"models": {"embedding": {"modelAPI": "embedder", "model": "bge-small"}}, **spec}
    return {"kind": "MemoryStore", "metadata": meta(name),
            "spec": crds.apply_defaults(SPEC_SCHEMAS["MemoryStore"], body), "status": status or {}}


def probed(resource, observed, probe):
    """The status the control planes write: resolved, then the probe's answer."""
    return memory_store_status(resource, resolve(resource, observed, SETTINGS, endpoint_of), probe)


def ready_store(**spec):
    resource = store(**spec)
    observed = {Ref("ModelAPI", NS, "embedder"): modelapi("embedder"), Ref("ModelAPI", NS, "llm"): modelapi("llm")}
    resource["status"] = probed(resource, observed, Probe("", ""))
    return resource


def test_defaults_make_an_embedded_user_scoped_store():
    spec = memory_store_spec(store())
    assert (spec.storage, spec.scope, spec.retention_days, spec.top_k) == ("local", "user", 0, 5)
    assert spec.collection == "team-facts" and spec.summarization is None


def test_crd_refuses_external_storage_without_a_url_or_with_both():
    with pytest.raises(crds.ValidationError, match="storage.external .url or connectionSecretRef. is required"):
        crds.validate(_manifest({"storage": {"type": "external"}}))
    both = {"type": "external", "external": {"url": "postgresql://kaos@db:5432/kaos",
                                             "connectionSecretRef": {"name": "db", "key": "url"}}}
    with pytest.raises(crds.ValidationError, match="exactly one of url and connectionSecretRef"):
        crds.validate(_manifest({"storage": both}))


def test_crd_refuses_a_password_in_the_url():
    bad = {"type": "external", "external": {"url": "postgresql://kaos:secret@db:5432/kaos"}}
    with pytest.raises(crds.ValidationError, match="storage.external.url"):
        crds.validate(_manifest({"storage": bad}))


def test_crd_refuses_an_unknown_scope():
    with pytest.raises(crds.ValidationError, match="scope"):
        crds.validate(_manifest({"scope": "everyone"}))


def _manifest(spec):
    return {"apiVersion": "kaos.tools/v1alpha1", "kind": "MemoryStore", "metadata": {"name": "facts"},
            "spec": {"models": {"embedding": {"modelAPI": "embedder", "model": "bge-small"}}, **spec}}


def test_a_store_depends_on_its_modelapis_each_once():
    resource = store(models={"embedding": {"modelAPI": "llm", "model": "e"},
                             "summarization": {"modelAPI": "llm", "model": "m"}})
    assert dependencies(resource) == [Ref("ModelAPI", NS, "llm")]


def test_a_store_waits_for_a_missing_embedding_modelapi():
    status = probed(store(), {Ref("ModelAPI", NS, "embedder"): None}, None)
    assert status["phase"] == "Waiting" and "ModelAPI embedder (not found)" in status["message"]
    assert status["ready"] is False


def test_status_is_pending_until_probed_then_ready():
    observed = {Ref("ModelAPI", NS, "embedder"): modelapi("embedder")}
    assert probed(store(), observed, None)["phase"] == PENDING
    status = probed(store(), observed, Probe("", ""))
    assert status["phase"] == READY and status["ready"] is True
    assert status["embedding"] == {"url": "http://modelapi-embedder.team:8000", "model": "bge-small"}
    assert {c["type"]: c["status"] for c in status["conditions"]} == {"Ready": "True", "MemoryDegraded": "False"}


def test_an_unreachable_store_is_degraded_with_a_message_naming_it():
    observed = {Ref("ModelAPI", NS, "embedder"): modelapi("embedder")}
    status = probed(store(), observed, Probe("127.0.0.1:1 refused the connection", ""))
    assert status["phase"] == DEGRADED and status["ready"] is False
    degraded = next(c for c in status["conditions"] if c["type"] == "MemoryDegraded")
    assert degraded["status"] == "True" and degraded["message"].startswith("store: 127.0.0.1:1 refused")
    assert "embedder" not in degraded["message"].split(";")[0]


def test_an_invalid_modelapi_name_fails_the_store():
    resource = store(models={"embedding": {"modelAPI": "Not_A_Name", "model": "e"}})
    status = probed(resource, {}, None)
    assert status["phase"] == FAILED and "spec.models.embedding.modelAPI" in status["message"]


def test_an_agent_waits_for_a_missing_store_with_a_clear_message():
    result = plan(agent(memory={"store": "facts"}), {Ref("ModelAPI", NS, "llm"): modelapi("llm"),
                                                      Ref("MemoryStore", NS, "facts"): None}, SETTINGS, endpoint_of)
    assert result.phase == WAITING and "MemoryStore facts (not found)" in result.message


def test_an_agent_waits_for_a_store_that_waits_and_says_why():
    waiting = store()
    waiting["status"] = probed(waiting, {}, None)
    result = plan(agent(memory={"store": "facts"}), {Ref("ModelAPI", NS, "llm"): modelapi("llm"),
                                                      Ref("MemoryStore", NS, "facts"): waiting}, SETTINGS, endpoint_of)
    assert result.phase == WAITING
    assert "MemoryStore facts (waiting: waiting for ModelAPI embedder (not found))" in result.message


def agent_plan(memory_store, **settings):
    return plan(agent(memory={"store": "facts"}),
                {Ref("ModelAPI", NS, "llm"): modelapi("llm"), Ref("MemoryStore", NS, "facts"): memory_store},
                SETTINGS.model_copy(update=settings), endpoint_of)


def test_an_agent_of_an_embedded_store_gets_its_file_and_models():
    result = agent_plan(ready_store(), memory_store_dir="/home/me/.kaos/data/memory")
    assert result.phase == DEPLOY
    assert result.values["longTermMemory"] == {
        "enabled": True, "store": "facts", "url": "sqlite:///home/me/.kaos/data/memory/team-facts.db",
        "urlSecretKeyRef": {}, "collection": "team-facts", "scope": "user",
        "embedding": {"url": "http://modelapi-embedder.team:8000", "model": "bge-small"},
        "extraction": {"url": "", "model": ""}, "retentionDays": 0, "topK": 5, "modelAPIs": ["embedder"],
    }


def test_in_a_cluster_the_embedded_file_is_in_the_pod():
    assert agent_plan(ready_store()).values["longTermMemory"]["url"] == "sqlite:///tmp/kaos-memory/team-facts.db"


PLATFORM_PG = "postgresql://kaos:secret@kaos-memory-postgres.kaos-system.svc.cluster.local:5432/kaos"


def test_with_the_platforms_postgres_a_local_store_lives_there_and_is_probed_there():
    values = agent_plan(ready_store(), memory_postgres_url=PLATFORM_PG).values["longTermMemory"]
    assert (values["url"], values["collection"]) == (PLATFORM_PG, "team-facts")
    resource = store()
    resolution = resolve(resource, {Ref("ModelAPI", NS, "embedder"): modelapi("embedder")}, SETTINGS, endpoint_of)
    assert probe_target(resolution, "", None).store_url == ""  # an embedded file in a pod: not probed
    assert probe_target(resolution, "", None, platform_url=PLATFORM_PG).store_url == PLATFORM_PG


def test_an_external_store_ignores_the_platforms_postgres():
    external = ready_store(storage={"type": "external", "external": {"url": "postgresql://db.team:5432/mine"}})
    assert agent_plan(external, memory_postgres_url=PLATFORM_PG).values["longTermMemory"]["url"] == \
        "postgresql://db.team:5432/mine"


def test_the_agent_is_let_into_the_stores_modelapis_each_once():
    both = ready_store(models={"embedding": {"modelAPI": "embedder", "model": "bge-small"},
                               "summarization": {"modelAPI": "llm", "model": "m"}})
    assert agent_plan(both).values["longTermMemory"]["modelAPIs"] == ["embedder", "llm"]
    same = ready_store(models={"embedding": {"modelAPI": "llm", "model": "e"}, "summarization": {"modelAPI": "llm", "model": "m"}})
    assert agent_plan(same).values["longTermMemory"]["modelAPIs"] == ["llm"]


def test_an_external_store_from_a_secret_and_an_extraction_model():
    result = agent_plan(ready_store(
        storage={"type": "external", "external": {"connectionSecretRef": {"name": "pg", "key": "url"}}},
        models={"embedding": {"modelAPI": "embedder", "model": "bge-small"},
                "summarization": {"modelAPI": "llm", "model": "ollama/smollm2:135m"}},
        scope="namespace", retentionDays=30, topK=8))
    memory = result.values["longTermMemory"]
    assert (memory["url"], memory["urlSecretKeyRef"]) == ("", {"name": "pg", "key": "url"})
    assert memory["extraction"] == {"url": "http://modelapi-llm.team:8000", "model": "ollama/smollm2:135m"}
    assert (memory["scope"], memory["retentionDays"], memory["topK"]) == ("namespace", 30, 8)


def test_an_agent_deploys_with_a_degraded_store():
    resource = store()
    resource["status"] = probed(resource, {Ref("ModelAPI", NS, "embedder"): modelapi("embedder")},
                                Probe("", "connection refused"))
    result = agent_plan(resource)
    assert result.phase == DEPLOY and result.values["longTermMemory"]["enabled"] is True


def test_an_agent_without_a_store_has_no_long_term_memory():
    result = plan(agent(), {Ref("ModelAPI", NS, "llm"): modelapi("llm")}, SETTINGS, endpoint_of)
    assert "longTermMemory" not in result.values


def test_the_status_written_fits_the_crd_status_schema():
    for resource in (ready_store(), store()):
        if not resource["status"]:
            resource["status"] = probed(resource, {}, None)
        conditions = [{**c, "lastTransitionTime": "2026-01-01T00:00:00Z"} for c in resource["status"]["conditions"]]
        manifest = {**resource, "apiVersion": "kaos.tools/v1alpha1", "metadata": {"name": "facts", "namespace": NS},
                    "status": {**resource["status"], "conditions": conditions}}
        crds.validate(manifest)

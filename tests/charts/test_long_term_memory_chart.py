"""longTermMemory (an Agent's MemoryStore) -> LONG_TERM_MEMORY_* env vars, the store URL from a
Secret key when it holds credentials; nothing rendered without it."""

import pytest

from tests.charts.rendering import container, env_of, render

BASE = {"name": "coordinator", "modelAPI": {"name": "llm", "url": "http://modelapi-llm.team.svc.cluster.local:8000"}}
MEMORY = {"enabled": True, "store": "facts", "url": "sqlite:///tmp/kaos-memory/team-facts.db", "urlSecretKeyRef": {},
          "collection": "team-facts", "scope": "user",
          "embedding": {"url": "http://modelapi-embedder.team.svc.cluster.local:8000", "model": "bge-small"},
          "extraction": {"url": "", "model": ""}, "retentionDays": 0, "topK": 5}


def memory_container(memory: dict) -> dict:
    return container(render("agent", {**BASE, "longTermMemory": memory}, namespace="team"))


def long_term_env(memory: dict) -> dict:
    env = env_of(memory_container(memory))
    return {name: value for name, value in env.items() if name.startswith("LONG_TERM_MEMORY_")}


def test_no_store_renders_no_variable():
    assert long_term_env({"enabled": False}) == {}


def test_an_embedded_store():
    assert long_term_env(MEMORY) == {
        "LONG_TERM_MEMORY_ENABLED": "true",
        "LONG_TERM_MEMORY_STORE_URL": "sqlite:///tmp/kaos-memory/team-facts.db",
        "LONG_TERM_MEMORY_COLLECTION": "team-facts",
        "LONG_TERM_MEMORY_SCOPE": "user",
        "LONG_TERM_MEMORY_EMBEDDING_URL": "http://modelapi-embedder.team.svc.cluster.local:8000",
        "LONG_TERM_MEMORY_EMBEDDING_MODEL": "bge-small",
        "LONG_TERM_MEMORY_RETENTION_DAYS": "0",
        "LONG_TERM_MEMORY_TOP_K": "5",
    }


def test_the_url_from_a_secret_and_an_extraction_model():
    memory = {**MEMORY, "url": "", "urlSecretKeyRef": {"name": "pg", "key": "url"}, "scope": "namespace",
              "extraction": {"url": "http://modelapi-llm.team.svc.cluster.local:8000", "model": "smollm2"},
              "retentionDays": 30, "topK": 8}
    entries = {entry["name"]: entry for entry in memory_container(memory)["env"]}
    assert entries["LONG_TERM_MEMORY_STORE_URL"] == {
        "name": "LONG_TERM_MEMORY_STORE_URL", "valueFrom": {"secretKeyRef": {"name": "pg", "key": "url"}}}
    env = long_term_env(memory)
    assert env["LONG_TERM_MEMORY_EXTRACTION_URL"] == "http://modelapi-llm.team.svc.cluster.local:8000"
    assert (env["LONG_TERM_MEMORY_EXTRACTION_MODEL"], env["LONG_TERM_MEMORY_SCOPE"]) == ("smollm2", "namespace")
    assert (env["LONG_TERM_MEMORY_RETENTION_DAYS"], env["LONG_TERM_MEMORY_TOP_K"]) == ("30", "8")


@pytest.mark.parametrize("broken", [
    {"url": "", "urlSecretKeyRef": {}},
    {"embedding": {"url": "", "model": "bge-small"}},
    {"scope": "everyone"},
    {"url": "mysql://db"},
])
def test_the_schema_refuses_values_that_would_render_a_broken_store(broken):
    with pytest.raises(Exception, match="longTermMemory|values don't meet the specifications"):
        render("agent", {**BASE, "longTermMemory": {**MEMORY, **broken}}, namespace="team")

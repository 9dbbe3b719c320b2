"""The pure parts of long-term memory: fact extraction by rules, a model's fact list, the
recalled-memories message, owners by scope, embeddings answers, the embedder's request rule, the
settings, and the MiniLM encoder's sense of meaning (the weights the package ships)."""

from __future__ import annotations

import asyncio

import pytest

from kaos_runtime.core.settings import AgentSettings, ConfigError
from kaos_runtime.engines.embeddings_server import problem
from kaos_runtime.long_term.embedder import EmbedderUnavailable, embeddings_url, vectors_of
from kaos_runtime.long_term.extraction import chat_url, facts_by_rules, parse_fact_list
from kaos_runtime.long_term.records import Hit, Record, is_memory_id, new_memory_id, owner_of, recalled_message
from kaos_runtime.long_term.service import RETRY_SECONDS, LongTermMemory, LongTermUnavailable
from kaos_runtime.long_term.store import StoreUnavailable, redacted

ENABLED = {"LONG_TERM_MEMORY_ENABLED": "true", "LONG_TERM_MEMORY_STORE_URL": "sqlite:///tmp/m.db",
           "LONG_TERM_MEMORY_EMBEDDING_URL": "http://127.0.0.1:9", "LONG_TERM_MEMORY_EMBEDDING_MODEL": "m"}


@pytest.mark.parametrize("said, facts", [
    ("Hello! My favourite colour is teal. What a day.", ["My favourite colour is teal."]),
    ("What is my favourite colour?", []),
    ("Remember that the meeting room is B2.", ["The meeting room is B2."]),
    ("I live in Lisbon and I work at a bakery.", ["I live in Lisbon and I work at a bakery."]),
    ("Call me Sam. Call me Sam.", ["Call me Sam."]),
    ("The weather is nice.", []),
    ("", []),
])
def test_facts_by_rules(said, facts):
    assert facts_by_rules(said) == facts


def test_facts_by_rules_are_bounded():
    assert len(facts_by_rules(" ".join(f"My item {n} is {n}." for n in range(50)))) == 8
    assert len(facts_by_rules("My " + "x" * 5000)[0]) == 2000


@pytest.mark.parametrize("reply, facts", [
    ('["I like tea.", "I like tea.", "My cat is Tom."]', ["I like tea.", "My cat is Tom."]),
    ('```json\n["I use vim."]\n```', ["I use vim."]),
    ("[]", []),
    ("echo: something", None),
    ('{"facts": []}', None),
    ('[1, 2]', None),
])
def test_parse_fact_list(reply, facts):
    assert parse_fact_list(reply) == facts


def test_urls_of_a_model_api():
    assert chat_url("http://m:8000") == "http://m:8000/v1/chat/completions"
    assert chat_url("http://m:8000/v1/") == "http://m:8000/v1/chat/completions"
    assert embeddings_url("http://e:80") == "http://e:80/v1/embeddings"
    assert embeddings_url("http://e:80/v1") == "http://e:80/v1/embeddings"
    assert redacted("postgresql://kaos:secret@db:5432/x") == "postgresql://kaos:***@db:5432/x"
    assert redacted("sqlite:///var/m.db") == "sqlite:///var/m.db"


def test_recalled_message_is_bounded_and_absent_when_nothing():
    hits = [Hit(Record(new_memory_id(), "key:1", f"fact {n} " + "x" * 300, 1.0), 0.1) for n in range(20)]
    message = recalled_message(hits)
    assert message["role"] == "system" and message["content"].startswith("Long-term memory:")
    assert "- fact 0 " in message["content"] and len(message["content"]) < 2300
    assert recalled_message([]) is None


def test_owners_by_scope():
    assert owner_of("user", "key:3 via key:1", "a") == "key:3 via key:1"
    assert owner_of("agent", "key:3", "helper") == "agent:helper"
    assert owner_of("namespace", "key:3", "helper") == owner_of("namespace", "key:4", "other")


def test_memory_ids():
    assert is_memory_id(new_memory_id())
    assert not is_memory_id("mem-1") and not is_memory_id("../etc")


def test_vectors_of_an_embeddings_answer():
    body = {"data": [{"index": 1, "embedding": [0, 1]}, {"index": 0, "embedding": [1, 0]}]}
    assert vectors_of(body, 2) == [[1.0, 0.0], [0.0, 1.0]]
    for wrong in ({"data": []}, {"error": "x"}, {"data": [{"index": 0, "embedding": [1]},
                                                          {"index": 1, "embedding": [1, 2]}]}):
        with pytest.raises(EmbedderUnavailable):
            vectors_of(wrong, 2 if wrong.get("data") else 1)


@pytest.mark.parametrize("body, wrong", [
    ({"input": "one"}, None), ({"input": ["a", "b"]}, None), ([], "JSON object"), ({"input": []}, "non-empty"),
    ({"input": [1]}, "strings"), ({"input": ["a"] * 257}, "more than 256"), ({"input": "x" * 9000}, "longer than"),
])
def test_embeddings_request_rule(body, wrong):
    found = problem(body)
    assert (found is None) if wrong is None else (wrong in found)


def test_settings_default_off_and_complete_when_on():
    off = AgentSettings.from_env({})
    assert not off.long_term.enabled and off.long_term.scope == "user" and off.long_term.top_k == 5
    on = AgentSettings.from_env({**ENABLED, "LONG_TERM_MEMORY_SCOPE": "Agent", "LONG_TERM_MEMORY_RETENTION_DAYS": "30"})
    assert on.long_term.scope == "agent" and on.long_term.retention_days == 30
    assert "secret" not in repr(AgentSettings.from_env({**ENABLED, "LONG_TERM_MEMORY_STORE_URL":
                                                        "postgresql://u:secret@h/db"}).long_term)


@pytest.mark.parametrize("change, message", [
    ({"LONG_TERM_MEMORY_STORE_URL": ""}, "LONG_TERM_MEMORY_STORE_URL is not set"),
    ({"LONG_TERM_MEMORY_STORE_URL": "mysql://x"}, "must start with postgresql://"),
    ({"LONG_TERM_MEMORY_EMBEDDING_URL": "ftp://x"}, "LONG_TERM_MEMORY_EMBEDDING_URL must be"),
    ({"LONG_TERM_MEMORY_EMBEDDING_MODEL": ""}, "LONG_TERM_MEMORY_EMBEDDING_MODEL is not set"),
    ({"LONG_TERM_MEMORY_SCOPE": "team"}, "LONG_TERM_MEMORY_SCOPE must be"),
    ({"LONG_TERM_MEMORY_TOP_K": "0"}, "LONG_TERM_MEMORY_TOP_K must be at least 1"),
    ({"LONG_TERM_MEMORY_RETENTION_DAYS": "-1"}, "LONG_TERM_MEMORY_RETENTION_DAYS must be at least 0"),
])
def test_settings_name_what_is_wrong(change, message):
    with pytest.raises(ConfigError, match=message):
        AgentSettings.from_env({**ENABLED, **change})


class _Down:
    """A store whose every call fails, counting the calls."""

    backend = "test"

    def __init__(self) -> None:
        self.calls = 0

    async def search(self, *args):
        self.calls += 1
        raise StoreUnavailable("store down")

    async def close(self):
        pass


class _Embedder:
    async def embed(self, texts):
        return [[1.0, 0.0] for _ in texts]

    async def close(self):
        pass


def test_degraded_recall_answers_nothing_and_rests_before_trying_again():
    now = [1000.0]
    store = _Down()
    memory = LongTermMemory(store, _Embedder(), None, scope="user", agent="a", top_k=5, retention_days=0,
                            store_url="sqlite:///x", clock=lambda: now[0])

    async def work():
        first = await memory.recall("key:1", "hello")
        resting = await memory.recall("key:1", "hello")  # within RETRY_SECONDS: not tried
        now[0] += RETRY_SECONDS + 1
        again = await memory.recall("key:1", "hello")
        with pytest.raises(LongTermUnavailable, match="store down"):
            await memory.search("key:1", "hello", 5)  # the HTTP API's call says why
        return first, resting, again

    assert asyncio.run(work()) == ([], [], [])
    assert store.calls == 3
    assert memory.status()["status"] == "degraded" and memory.status()["reason"] == "store down"


def test_minilm_places_a_question_near_its_fact():
    from kaos_runtime.engines.minilm import MiniLM

    encoder = MiniLM.load()
    facts = ["My favourite colour is teal.", "I live in Lisbon.", "My dog is called Biscuit.", "I work as a nurse."]
    questions = ["What colour do I like best?", "Which city do I live in?", "What is my dog's name?",
                 "What is my job?"]
    similarity = encoder.embed(questions) @ encoder.embed(facts).T
    assert list(similarity.argmax(axis=1)) == [0, 1, 2, 3]
    assert abs(float((encoder.embed(["x"]) ** 2).sum()) - 1.0) < 1e-5

"""kaos_runtime.memory: one suite, run against both backends (local and a real redis-server)."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from kaos_runtime.core.settings import ConfigError, MemorySettings
from kaos_runtime.memory import Memory, MemoryUnavailable, create_memory
from kaos_runtime.memory.local import LocalMemory
from kaos_runtime.memory.redis_store import RedisMemory
from tests.support.polling import eventually
from tests.support.redis_server import RedisServer

_prefixes = itertools.count()


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory):
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield server
    server.stop()


@pytest.fixture(params=["local", "redis"])
def make_memory(request):
    """make_memory(**settings) -> a Memory of the parametrized backend (a fresh key prefix each)."""
    def make(**settings) -> Memory:
        if request.param == "redis":
            server = request.getfixturevalue("redis_server")
            settings = {"backend": "redis", "redis_url": server.url,
                        "key_prefix": f"test:{next(_prefixes)}", **settings}
        return create_memory(MemorySettings(**settings), "tester")

    return make


async def test_bounds_filters_and_total(make_memory):
    memory = make_memory(max_sessions=2, max_session_events=3)
    for index in range(5):
        await memory.record("s1", "user_message", f"m{index}")
    await memory.record("s2", "agent_response", "a")
    events, total = await memory.events(session_id="s1")
    assert [e["content"] for e in events] == ["m2", "m3", "m4"] and total == 3
    await memory.record("s3", "user_message", "x")
    assert await memory.sessions() == ["s2", "s3"]
    events, total = await memory.events(limit=1)
    assert total == 2 and events[0]["content"] == "x"
    assert (await memory.events(event_type="agent_response"))[1] == 1
    assert await memory.events(limit=0) == ([], 2)
    assert await memory.events(session_id="nobody") == ([], 0)
    await memory.close()


async def test_order_across_sessions_and_least_recently_active_first(make_memory):
    memory = make_memory()
    await memory.record("a", "user_message", "a1")
    await memory.record("b", "user_message", "b1")
    await memory.record("a", "agent_response", "a2", {"step": 1})
    await memory.record("c", "tool_call", {"tool": "t", "arguments": {"x": 1}})
    events, total = await memory.events()
    assert total == 4 and [e["content"] for e in events] == ["a1", "b1", "a2", {"tool": "t", "arguments": {"x": 1}}]
    assert events[2]["metadata"] == {"session_id": "a", "step": 1}
    assert set(events[0]) == {"event_id", "timestamp", "event_type", "content", "metadata"}
    assert len({e["event_id"] for e in events}) == 4
    assert await memory.sessions() == ["b", "a", "c"]
    newest, total = await memory.events(limit=2, event_type="user_message")
    assert total == 2 and [e["content"] for e in newest] == ["a1", "b1"]
    newest, total = await memory.events(limit=1, session_id="a", event_type="user_message")
    assert total == 1 and [e["content"] for e in newest] == ["a1"]
    await memory.close()


async def test_context_events_are_the_turns_and_summaries(make_memory):
    memory = make_memory()
    await memory.record("s", "user_message", "hello")
    await memory.record("s", "tool_call", {"tool": "t"})
    await memory.record("s", "agent_response", "hi")
    await memory.record("s", "context_compacted", "they greeted", {"replaces": []})
    await memory.record("s", "task_delegation_received", "do it")
    await memory.record("s", "agent_response", "done")
    found = await memory.context_events("s")
    assert [(e["event_type"], e["content"]) for e in found] == [
        ("user_message", "hello"), ("agent_response", "hi"), ("context_compacted", "they greeted"),
        ("task_delegation_received", "do it"), ("agent_response", "done")]
    assert found[2]["metadata"]["replaces"] == []
    assert await memory.context_events("other") == []
    await memory.close()


async def test_a_session_lock_is_held_once_until_unlocked_or_expired(make_memory):
    memory = make_memory()
    token = await memory.lock("s", "compaction", 60)
    assert token and await memory.lock("s", "compaction", 60) is None
    assert await memory.lock("other", "compaction", 60)  # per session
    await memory.unlock("s", "compaction", "not-the-token")
    assert await memory.lock("s", "compaction", 60) is None
    await memory.unlock("s", "compaction", token)
    assert await memory.lock("s", "compaction", 0.05)
    assert await eventually(lambda: memory.lock("s", "compaction", 60), timeout=5, what="the lock's expiry")
    await memory.close()


async def test_disabled_records_nothing(make_memory):
    memory = make_memory(enabled=False)
    await memory.record("s", "user_message", "x")
    assert await memory.events() == ([], 0) and await memory.sessions() == []
    assert await memory.context_events("s") == []
    await memory.close()


async def test_concurrent_writers_lose_nothing_and_keep_their_order(make_memory):
    memory = make_memory(max_session_events=1000)

    async def writer(name: str) -> None:
        for index in range(50):
            await memory.record("shared", "user_message", f"{name}-{index}")

    await asyncio.gather(*(writer(f"w{n}") for n in range(4)))
    events, total = await memory.events(limit=None, session_id="shared")
    assert total == 200
    for name in (f"w{n}" for n in range(4)):
        mine = [e["content"] for e in events if e["content"].startswith(name + "-")]
        assert mine == [f"{name}-{index}" for index in range(50)]
    await memory.close()


async def test_events_recorded_together_keep_the_bounds_event_by_event(make_memory):
    """On redis the events queued meanwhile go out as one batch (one script call): each is still
    appended, trimmed and evicted in its turn, so both backends end alike."""
    memory = make_memory(max_sessions=2, max_session_events=2)
    for session, text in [("s1", "a"), ("s2", "b"), ("s3", "c"), ("s1", "d"), ("s1", "e"), ("s1", "f")]:
        await memory.record(session, "user_message", text)  # queued: nothing sent yet on redis
    await memory.record("s3", "agent_response", "g")  # s1 was dropped for s3, then s2 for the new s1
    assert await memory.sessions() == ["s1", "s3"]
    events, total = await memory.events()
    assert total == 4 and [e["content"] for e in events] == ["c", "e", "f", "g"]
    assert [e["content"] for e in (await memory.events(session_id="s1"))[0]] == ["e", "f"]
    await memory.close()


async def test_a_claim_records_one_owner_atomically(make_memory):
    """Two callers racing for one new session id: exactly one owns it, and both are told who."""
    memory = make_memory()
    for round_ in range(20):
        session = f"race-{round_}"
        owners = await asyncio.gather(*(memory.claim(session, f"key:{n}") for n in range(1, 5)))
        assert len(set(owners)) == 1 and owners[0] in {"key:1", "key:2", "key:3", "key:4"}
        assert await memory.owner(session) == owners[0]
        assert await memory.claim(session, "key:9") == owners[0]
    assert await memory.owner("never") is None
    await memory.close()


async def test_sessions_and_events_of_one_owner(make_memory):
    memory = make_memory()
    await memory.claim("mine", "key:1")
    await memory.record("mine", "user_message", "m1")
    await memory.claim("theirs", "key:2 via key:1")
    await memory.record("theirs", "user_message", "t1")
    await memory.record("legacy", "user_message", "l1")  # recorded without a claim (auth was off)
    await memory.record("mine", "agent_response", "m2")
    assert await memory.sessions(owner="key:1") == ["mine"]
    assert await memory.sessions(owner="key:2 via key:1") == ["theirs"]
    assert await memory.sessions() == ["theirs", "legacy", "mine"]
    events, total = await memory.events(owner="key:1")
    assert total == 2 and [e["content"] for e in events] == ["m1", "m2"]
    assert (await memory.events(owner="key:3"))[1] == 0
    assert await memory.owner("legacy") == "anonymous"
    assert await memory.claim("legacy", "key:1") == "anonymous"  # events without an owner are nobody's to take
    assert await memory.sessions(owner="anonymous") == ["legacy"]
    await memory.close()


async def test_an_evicted_sessions_owner_goes_with_it(make_memory):
    memory = make_memory(max_sessions=2)
    await memory.claim("a", "key:1")
    await memory.record("a", "user_message", "x")
    await memory.claim("b", "key:1")  # a claimed session counts against the bound, with no events yet
    assert await memory.sessions(owner="key:1") == ["a", "b"]
    await memory.claim("c", "key:2")
    assert await memory.sessions() == ["b", "c"] and await memory.owner("a") is None
    assert await memory.claim("a", "key:3") == "key:3"  # a new session under the old id
    assert await memory.events(session_id="a") == ([], 0)
    await memory.close()


async def test_with_memory_off_nothing_is_owned(make_memory):
    memory = make_memory(enabled=False)
    assert await memory.claim("s", "key:1") == "key:1" and await memory.claim("s", "key:2") == "key:2"
    assert await memory.owner("s") is None
    await memory.close()


def test_backend_is_chosen_by_settings(redis_server):
    assert isinstance(create_memory(MemorySettings(), "a"), LocalMemory)
    redis_memory = create_memory(MemorySettings(backend="redis", redis_url=redis_server.url), "a")
    assert isinstance(redis_memory, RedisMemory) and redis_memory.prefix == "kaos:agent:a"


def test_redis_settings_errors_name_the_variable():
    with pytest.raises(ConfigError, match="REDIS_URL is not set"):
        MemorySettings.from_env({"MEMORY_BACKEND": "redis"})
    with pytest.raises(ConfigError, match="REDIS_URL must start with redis://"):
        MemorySettings.from_env({"MEMORY_BACKEND": "redis", "REDIS_URL": "http://x"})
    with pytest.raises(ConfigError, match="MEMORY_BACKEND must be 'local' or 'redis'"):
        MemorySettings.from_env({"MEMORY_BACKEND": "postgres"})
    with pytest.raises(ConfigError, match="MEMORY_TTL_SECONDS must be at least 0"):
        MemorySettings.from_env({"MEMORY_TTL_SECONDS": "-1"})
    settings = MemorySettings.from_env({"MEMORY_BACKEND": " Redis ", "REDIS_URL": "redis://u:secret@h:1/2",
                                        "MEMORY_TTL_SECONDS": "60", "MEMORY_KEY_PREFIX": "kaos:ns:agent:a"})
    assert (settings.backend, settings.ttl_seconds, settings.key_prefix) == ("redis", 60, "kaos:ns:agent:a")
    assert "secret" not in repr(settings)


async def test_redis_keys_bounded_and_ttl_expires_sessions(redis_server):
    memory = RedisMemory(MemorySettings(backend="redis", redis_url=redis_server.url, key_prefix="test:bounded",
                                        max_sessions=5, max_session_events=4), "a")
    for index in range(40):
        await memory.record(f"s{index}", "user_message", "x" * 100)
        await memory.record(f"s{index}", "agent_response", "y")
    await memory.flush()
    keys = redis_server.keys("test:bounded:*")
    assert len(keys) == 5 + 2, keys
    assert await memory.sessions() == [f"s{index}" for index in range(35, 40)]
    for index in range(40, 60):  # owned sessions: two keys each, still bounded
        await memory.claim(f"s{index}", "key:1")
        await memory.record(f"s{index}", "agent_response", "z")
    await memory.flush()
    assert len(redis_server.keys("test:bounded:*")) == 2 * 5 + 2
    await memory.close()

    expiring = RedisMemory(MemorySettings(backend="redis", redis_url=redis_server.url, key_prefix="test:ttl",
                                          ttl_seconds=1), "a")
    await expiring.record("old", "user_message", "x")
    await expiring.flush()
    assert 0 < int(redis_server.command("PTTL", "test:ttl:session:old")) <= 1000
    redis_server.command("PEXPIRE", "test:ttl:session:old", "1")  # as if a second had passed
    await eventually(lambda: redis_server.command("EXISTS", "test:ttl:session:old") == 0, 5, what="expiry")
    await expiring.record("new", "user_message", "y")
    assert await expiring.sessions() == ["new"]
    assert (await expiring.events())[1] == 1
    await expiring.close()
    claimed = RedisMemory(MemorySettings(backend="redis", redis_url=redis_server.url, key_prefix="test:ttlclaim",
                                         ttl_seconds=1), "a")
    await claimed.claim("owned", "key:1")  # the oldest session, with no events yet: not pruned as expired
    await claimed.record("owned", "user_message", "z")
    await claimed.flush()
    assert 0 < int(redis_server.command("PTTL", "test:ttlclaim:owner:owned")) <= 1000
    assert await claimed.sessions(owner="key:1") == ["owned"] and await claimed.owner("owned") == "key:1"
    await claimed.close()


async def test_redis_unreachable_is_memory_unavailable_then_an_error_event(tmp_path):
    server = RedisServer(tmp_path / "redis").start()
    memory = RedisMemory(MemorySettings(backend="redis", redis_url=server.url, redis_timeout=1), "a")
    try:
        await memory.record("s", "user_message", "before")
        server.stop()
        await memory.record("s", "user_message", "during")  # queued: the request does not wait for it
        with pytest.raises(MemoryUnavailable, match=r"agent memory unavailable: Redis at 127\.0\.0\.1:\d+/0"):
            await memory.record("s", "agent_response", "during")  # the end of a turn waits, and fails
        with pytest.raises(MemoryUnavailable):
            await memory.events()
        with pytest.raises(MemoryUnavailable, match=r"\(ping\)"):
            await memory.check()
        server = RedisServer(tmp_path / "redis", port=server.port).start()
        await memory.record("s", "user_message", "after")
        await memory.flush()
        events, total = await memory.events(session_id="s")
        assert [e["event_type"] for e in events] == ["error", "user_message"]
        assert "unavailable" in events[0]["content"] and events[0]["metadata"]["memory"] == "unavailable"
    finally:
        await memory.close()
        server.stop()


async def test_redis_sends_what_is_queued_as_one_script_call(redis_server):
    """The group commit: 16 turns that end at once are one EVALSHA, every event in its order; a
    Redis that lost the script (SCRIPT FLUSH, as after a restart) is given it again; a request
    cancelled while it waits leaves its events written and the writer working."""
    memory = RedisMemory(MemorySettings(backend="redis", redis_url=redis_server.url, key_prefix="test:batch",
                                        max_session_events=1000), "a")

    def calls() -> int:
        return redis_server.command("INFO", "commandstats").get("cmdstat_evalsha", {}).get("calls", 0)

    async def turn(index: int) -> None:
        await memory.record(f"s{index}", "user_message", f"q{index}")
        await memory.record("shared", "tool_call", {"turn": index})
        await memory.record(f"s{index}", "agent_response", f"a{index}")

    try:
        await turn(-1)  # the connection made, the script loaded
        before = calls()
        await asyncio.gather(*(turn(index) for index in range(16)))
        assert calls() - before == 1
        assert [e["content"] for e in (await memory.events(session_id="shared"))[0]] == [
            {"turn": index} for index in range(-1, 16)]
        events, total = await memory.events(session_id="s7")
        assert total == 2 and [e["content"] for e in events] == ["q7", "a7"]
        redis_server.command("SCRIPT", "FLUSH")
        await turn(16)
        waiting = asyncio.ensure_future(memory.record("s17", "agent_response", "a17"))
        await asyncio.sleep(0)
        waiting.cancel()
        await turn(18)
        assert [e["content"] for e in (await memory.events(limit=3))[0]] == ["q18", {"turn": 18}, "a18"]
        assert [e["content"] for e in (await memory.events(session_id="s17"))[0]] == ["a17"]
    finally:
        await memory.close()

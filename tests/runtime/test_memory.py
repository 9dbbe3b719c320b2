"""kaos_runtime.memory: the bounded event store."""

from __future__ import annotations

from kaos_runtime.memory import Memory
from kaos_runtime.settings import MemorySettings


def test_memory_bounds_filters_and_total():
    memory = Memory(MemorySettings(max_sessions=2, max_session_events=3))
    for index in range(5):
        memory.record("s1", "user_message", f"m{index}")
    memory.record("s2", "agent_response", "a")
    events, total = memory.events(session_id="s1")
    assert [e["content"] for e in events] == ["m2", "m3", "m4"] and total == 3
    memory.record("s3", "user_message", "x")
    assert memory.sessions() == ["s2", "s3"]
    events, total = memory.events(limit=1)
    assert total == 2 and events[0]["content"] == "x"
    assert memory.events(event_type="agent_response")[1] == 1
    assert memory.events(limit=0) == ([], 2)


def test_memory_disabled_records_nothing():
    memory = Memory(MemorySettings(enabled=False))
    memory.record("s", "user_message", "x")
    assert memory.events() == ([], 0) and memory.sessions() == []

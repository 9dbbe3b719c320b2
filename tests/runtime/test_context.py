"""The context builder (kaos_runtime/context/): pure functions over messages and events, and
compaction on the local memory (the redis backend: tests/runtime/test_redis_memory.py)."""

from __future__ import annotations

import json

import pytest

from kaos_runtime.context.compaction import Compactor
from kaos_runtime.context.fit import MARKER, SUMMARY, SUMMARY_HEADING, cut, fit, turns_of
from kaos_runtime.context.history import history_of, to_compact
from kaos_runtime.context.tokens import PER_REQUEST, Tokens, tokens_for
from kaos_runtime.context.window import DEFAULT_WINDOW, model_limits, window_for
from kaos_runtime.core.settings import AgentSettings, MemorySettings
from kaos_runtime.memory import create_memory
from kaos_runtime.memory.local import LocalMemory
from tests.support.redis_server import RedisServer

TOKENS = Tokens()


def total(messages: list[dict], tokens: Tokens = TOKENS) -> int:
    return PER_REQUEST + sum(map(tokens.message, messages))


def conversation(turns: int, size: int = 30) -> list[dict]:
    messages = []
    for number in range(turns):
        messages.append({"role": "user", "content": f"question {number} " + "q" * size})
        messages.append({"role": "assistant", "content": f"answer {number} " + "a" * size})
    return messages


def tool_step(call_id: str, result: str) -> list[dict]:
    call = {"id": call_id, "type": "function", "function": {"name": "big", "arguments": "{}"}}
    return [{"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call_id, "content": result}]


SYSTEM = {"role": "system", "content": "You are a helpful agent."}


def test_everything_goes_when_it_fits():
    messages = [SYSTEM, *conversation(3), {"role": "user", "content": "now"}]
    fitted = fit(messages, len(messages), 10_000, TOKENS)
    assert fitted.messages == messages and fitted.dropped == 0 and fitted.cut == 0
    assert fitted.tokens == total(messages)


def test_history_is_dropped_from_the_oldest_end_whole_turns_at_a_time():
    history = conversation(40)
    messages = [SYSTEM, *history, {"role": "user", "content": "the current question"}]
    budget = 600
    fitted = fit(messages, len(messages), budget, TOKENS)
    assert fitted.tokens <= budget and total(fitted.messages) == fitted.tokens
    assert fitted.messages[0] == SYSTEM and fitted.messages[-1] == messages[-1]
    kept = fitted.messages[1:-1]
    assert kept == history[len(history) - len(kept):]  # the newest, contiguous
    assert kept[0]["role"] == "user" and fitted.dropped == len(history) - len(kept) > 0
    # one more turn would not have fitted
    longer = history[len(history) - len(kept) - 2:]
    assert total([SYSTEM, *longer, messages[-1]]) > budget


def test_a_tool_call_is_never_separated_from_its_result():
    turn = [{"role": "user", "content": "old"}, *tool_step("c1", "r" * 300), {"role": "assistant", "content": "old answer"}]
    assert turns_of(turn) == [turn]
    messages = [SYSTEM, *turn, {"role": "user", "content": "now"}]
    for budget in range(60, 400, 7):
        sent = fit(messages, len(messages), budget, TOKENS).messages
        assert all(message in sent for message in turn) or not any(message in sent for message in turn)


def test_an_oversized_tool_result_is_cut_with_a_marker_and_the_turn_fits():
    result = " ".join(f"word{number}" for number in range(20_000))
    messages = [SYSTEM, *conversation(5), {"role": "user", "content": "run big"}, *tool_step("c1", result)]
    steps_from = len(messages) - 2
    budget = 4000
    fitted = fit(messages, steps_from, budget, TOKENS)
    assert fitted.tokens <= budget and fitted.cut == 1
    sent = fitted.messages[-1]
    assert sent["role"] == "tool" and sent["tool_call_id"] == "c1"
    assert sent["content"].startswith("word0 word1") and "tokens cut here" in sent["content"]
    assert TOKENS.message(sent) <= budget // 4
    assert messages[-1]["content"] == result  # the run's own message is not changed
    assert fitted.messages[-2] == messages[-2] and fitted.messages[-3] == messages[-3]  # call, then request


def test_many_results_of_the_current_turn_are_cut_until_the_turn_fits():
    steps = [message for number in range(6) for message in tool_step(f"c{number}", "x" * 3000)]
    messages = [SYSTEM, {"role": "user", "content": "go"}, *steps]
    budget = 1000
    fitted = fit(messages, 2, budget, TOKENS)
    assert fitted.tokens <= budget
    assert [m["role"] for m in fitted.messages] == [m["role"] for m in messages]  # nothing dropped


def test_a_request_larger_than_the_budget_is_cut_itself():
    messages = [SYSTEM, *conversation(2), {"role": "user", "content": "z" * 30_000}]
    fitted = fit(messages, len(messages), 2000, TOKENS)
    assert fitted.tokens <= 2000 and fitted.messages[-1]["content"].startswith("zzz")
    assert fitted.dropped == 4


def test_fenced_results_of_the_steps_are_cut_but_not_the_history():
    history = [{"role": "user", "content": "h" * 300}, {"role": "assistant", "content": "ok"}]
    steps = [{"role": "assistant", "content": '```tool_call\n{"tool": "big"}\n```'},
             {"role": "user", "content": "Result of tool big:\n" + "y" * 9000}]
    messages = [SYSTEM, *history, {"role": "user", "content": "go"}, *steps]
    fitted = fit(messages, 4, 3000, TOKENS)
    assert fitted.messages[1:3] == history and fitted.messages[-1]["content"].endswith("memory]")


def test_a_summary_goes_into_the_system_prompt():
    messages = [SYSTEM, {"role": "system", "content": "the user is Ada", SUMMARY: True}, *conversation(2),
                {"role": "user", "content": "who am I?"}]
    fitted = fit(messages, len(messages), 10_000, TOKENS)
    assert fitted.messages[0]["content"] == f"{SYSTEM['content']}\n\n{SUMMARY_HEADING}the user is Ada"
    assert [m["role"] for m in fitted.messages].count("system") == 1
    assert not any(SUMMARY in message for message in fitted.messages)


def test_a_callers_system_message_is_not_taken_for_a_summary():
    messages = [SYSTEM, {"role": "system", "content": "Answer in French."}, {"role": "user", "content": "hi"}]
    fitted = fit(messages, len(messages), 10_000, TOKENS)
    assert fitted.messages == messages


def test_cut_keeps_the_head_and_says_how_much_is_left_out():
    text = "abc " * 1000
    shorter = cut({"role": "tool", "content": text}, 100, TOKENS)
    assert TOKENS.message(shorter) <= 100 and shorter["content"].startswith("abc abc")
    assert MARKER.split("{")[0] in shorter["content"]


def test_tiktoken_counts_for_openai_models_from_the_bundled_file():
    tokens = tokens_for("openai/gpt-4o-mini")
    assert tokens.name == "tiktoken:o200k_base"
    assert tokens.count("hello world") == 2
    result = " ".join(f"w{number}" for number in range(5000))
    messages = [SYSTEM, {"role": "user", "content": "go"}, *tool_step("c", result)]
    fitted = fit(messages, 2, 1000, tokens)
    assert fitted.tokens <= 1000 and total(fitted.messages, tokens) == fitted.tokens
    assert tokens_for("llama3").name == tokens_for("gpt-4o", "estimate").name == "estimate"


def test_the_window_comes_from_the_setting_then_the_model_map_then_the_default():
    limits = model_limits(json.dumps({
        "sample_spec": {"max_tokens": "set to max_output_tokens", "max_input_tokens": "n"},
        "gpt-x": {"max_input_tokens": 128000, "max_output_tokens": 16384, "litellm_provider": "openai"},
        "small": {"max_tokens": 2048, "nested": {"a": 1}},
    }))
    assert window_for("openai/gpt-x", 0, limits).tokens == 128000
    assert window_for("gpt-x", 0, limits).answer == 16384
    assert window_for("gpt-x", 4096, limits).tokens == 4096 and window_for("gpt-x", 4096, limits).answer == 1024
    assert window_for("small", 0, limits).input == 2048 - 512
    assert window_for("unknown", 0, limits).tokens == DEFAULT_WINDOW


def events_of(messages: list[dict]) -> list[dict]:
    kinds = {"user": "user_message", "assistant": "agent_response"}
    return [{"event_id": f"e{number}", "event_type": kinds[m["role"]], "content": m["content"], "metadata": {}}
            for number, m in enumerate(messages)]


def test_history_is_the_latest_summary_and_the_turns_it_does_not_replace():
    events = events_of(conversation(4))
    events.insert(4, {"event_id": "k1", "event_type": "context_compacted", "content": "first two turns",
                      "metadata": {"replaces": ["e0", "e1", "e2", "e3"]}})
    events.append({"event_id": "k2", "event_type": "context_compacted", "content": "three turns",
                   "metadata": {"replaces": ["e4", "e5", "k1"]}})
    history = history_of(events)
    assert history.summary == "three turns" and history.summary_id == "k2"
    assert [turn.event_id for turn in history.turns] == ["e6", "e7"]
    assert history.messages()[0] == {"role": "system", "content": "three turns", SUMMARY: True}


def test_compaction_takes_the_oldest_whole_turns_and_keeps_the_newest():
    history = history_of(events_of(conversation(20)))
    assert to_compact(history, history.tokens(TOKENS), 10_000, TOKENS) == []
    chosen = to_compact(history, 200, 10_000, TOKENS)
    assert chosen and chosen[0].event_id == "e0" and chosen[-1].message["role"] == "assistant"
    kept = history.turns[len(chosen):]
    assert sum(TOKENS.message(turn.message) for turn in kept) <= 100 and kept[0].message["role"] == "user"
    few = to_compact(history, 200, 60, TOKENS)  # what the summarizer may read bounds it
    assert 0 < len(few) < len(chosen) and few[-1].message["role"] == "assistant"


async def record_turns(memory, session: str, turns: int, size: int = 300) -> None:
    for number in range(turns):
        await memory.record(session, "user_message", f"fact {number}: " + "u" * size)
        await memory.record(session, "tool_result", {"tool": "t", "result": "r" * size})
        await memory.record(session, "agent_response", f"noted {number}")


async def test_compaction_records_a_summary_that_points_to_what_it_replaces():
    memory = LocalMemory(MemorySettings())
    await record_turns(memory, "s", 30)
    before, _ = await memory.events(session_id="s")
    compactor = Compactor(memory, None, 50)
    history = await compactor.compacted("s", history_of(await memory.context_events("s")), 4000, TOKENS)
    assert history.summary.startswith("user: fact 0: uuu")  # extractive: deterministic
    compacted = (await memory.events(session_id="s", event_type="context_compacted"))[0]
    assert len(compacted) == 1
    replaces = compacted[0]["metadata"]["replaces"]
    ids = [event["event_id"] for event in before]
    assert replaces == [e["event_id"] for e in before if e["event_type"] != "tool_result"][:len(replaces)]
    assert all(event_id in ids for event_id in replaces)  # the events stay
    assert (await memory.events(session_id="s"))[1] == len(before) + 1
    turn_ids = [e["event_id"] for e in before if e["event_type"] != "tool_result"]
    assert [turn.event_id for turn in history.turns] == turn_ids[len(replaces):]  # the newest turns stay
    assert history.tokens(TOKENS) <= 2000
    # again: the summary of the summary replaces the first one
    await record_turns(memory, "s", 30)
    again = await compactor.compacted("s", history_of(await memory.context_events("s")), 4000, TOKENS)
    latest = (await memory.events(session_id="s", event_type="context_compacted"))[0][-1]
    assert compacted[0]["event_id"] in latest["metadata"]["replaces"]
    assert again.summary.startswith("user: fact 0")


async def test_compaction_runs_at_most_once_at_a_time_per_session():
    memory = LocalMemory(MemorySettings())
    await record_turns(memory, "s", 30)
    held = await memory.lock("s", "compaction", 60)
    compactor = Compactor(memory, None, 50)
    history = history_of(await memory.context_events("s"))
    assert await compactor.compacted("s", history, 4000, TOKENS) == history  # taken: left as it is
    assert (await memory.events(event_type="context_compacted"))[1] == 0
    await memory.unlock("s", "compaction", held)
    await compactor.compacted("s", history, 4000, TOKENS)
    assert (await memory.events(event_type="context_compacted"))[1] == 1


@pytest.mark.parametrize("env, expected", [
    ({}, (0, "auto", False, 50, "")),
    ({"MODEL_CONTEXT_WINDOW": "4096", "MODEL_TOKENIZER": "Estimate", "MEMORY_COMPACTION": "true",
      "MEMORY_COMPACTION_THRESHOLD_PERCENT": "80", "MEMORY_COMPACTION_MODEL": " small "}, (4096, "estimate", True, 80, "small")),
])
def test_context_settings(env, expected):
    context = AgentSettings.from_env(env).context
    assert (context.window, context.tokenizer, context.compaction, context.compaction_threshold_percent,
            context.compaction_model) == expected


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory):
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield server
    server.stop()


async def test_a_compacted_session_on_redis_survives_a_restart(redis_server):
    settings = MemorySettings(backend="redis", redis_url=redis_server.url, key_prefix="test:compaction")
    memory = create_memory(settings, "tester")
    await record_turns(memory, "s", 30)
    compacted = await Compactor(memory, None, 50).compacted("s", history_of(await memory.context_events("s")),
                                                           4000, TOKENS)
    assert compacted.summary
    await memory.close()
    restarted = create_memory(settings, "tester")  # another process, the same Redis
    history = history_of(await restarted.context_events("s"))
    assert history == compacted
    # the lock is Redis's: another replica finds it taken
    token = await restarted.lock("s", "compaction", 60)
    other = create_memory(settings, "tester")
    assert token and await other.lock("s", "compaction", 60) is None
    await restarted.unlock("s", "compaction", token)
    assert await other.lock("s", "compaction", 60)
    await restarted.close()
    await other.close()

"""Compaction on a running agent under DEBUG_MOCK_RESPONSES: deterministic, the model's replies
untouched (no scripted reply is spent on a summary), the events kept."""

from __future__ import annotations

from .conftest import agent_env, chat, events

TURNS = 40
FILLER = " ".join(f"detail{number}" for number in range(60))


def long_session(agent) -> list[str]:
    answers = []
    for turn in range(TURNS):
        text = ("The launch code is 0451. " if turn == 0 else "") + f"Turn {turn}. {FILLER}"
        response = chat(agent, text, session_id="long")
        assert response.status_code == 200, response.text
        answers.append(response.json()["choices"][0]["message"]["content"])
    return answers


def test_compaction_under_mock_responses_is_deterministic_and_spends_no_reply(start):
    replies = [f"reply {turn}" for turn in range(TURNS)]
    env = agent_env("compacting", None, DEBUG_MOCK_RESPONSES=replies, MODEL_CONTEXT_WINDOW=2048,
                    MEMORY_COMPACTION="true", MEMORY_COMPACTION_THRESHOLD_PERCENT=50)
    first, second = start("agent", "compacting-1", env), start("agent", "compacting-2", env)
    assert long_session(first) == replies == long_session(second)
    summaries = [[event["content"] for event in events(agent, session_id="long", event_type="context_compacted")["events"]]
                 for agent in (first, second)]
    assert summaries[0] and summaries[0] == summaries[1]
    assert summaries[0][-1].startswith("user: The launch code is 0451.")
    compacted = events(first, session_id="long", event_type="context_compacted")["events"][-1]
    turns = events(first, session_id="long", limit=1000)["events"]
    ids = {event["event_id"]: event["event_type"] for event in turns}
    assert {ids[event_id] for event_id in compacted["metadata"]["replaces"]} <= {
        "user_message", "agent_response", "context_compacted"}
    assert sum(event["event_type"] == "user_message" for event in turns) == TURNS  # the events stay

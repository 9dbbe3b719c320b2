"""`kaos approvals`: how the listings of several agents become one table, and how an id is found
(pure parts; tests/cli/test_approvals_cli.py runs the command against real agents)."""

from datetime import datetime, timezone

import pytest

from kaos.cli.approvals import (
    ApprovalError,
    cmd_approvals_decide,
    cmd_approvals_list,
    find,
    held_approvals,
    table,
    time_left,
)
from kaos.cli.commands import parse

NOW = datetime(2025, 1, 1, 12, 0, 0, tzinfo=timezone.utc)


def approval(id, tool="delete_file", status="pending", **extra):
    return {"id": id, "tool": tool, "arguments": {"path": "/tmp/x"}, "session_id": "s1", "status": status,
            "requested_at": "2025-01-01T11:59:00+00:00", "expires_at": "2025-01-01T12:04:05+00:00",
            "decided_by": None, "reason": None, **extra}


def test_a_peers_call_listed_by_the_peer_and_its_coordinator_shows_once_at_the_peer():
    listings = {"coordinator": [approval("a1", peer="worker")], "worker": [approval("a1")]}
    [held] = held_approvals("team", listings)
    assert (held.holder, held.via, held.id) == ("worker", "worker", "a1")


def test_a_peer_only_its_coordinator_lists_is_decided_through_the_coordinator():
    [held] = held_approvals("team", {"coordinator": [approval("x9", peer="travel-agent")]})
    assert (held.holder, held.via) == ("travel-agent", "coordinator")


def test_the_same_id_in_two_agents_is_two_approvals_and_finding_it_asks_which():
    held = held_approvals("team", {"a": [approval("1")], "b": [approval("1")]})
    assert len(held) == 2
    with pytest.raises(ApprovalError, match=r"held by several agents \(team/a, team/b\).*--agent"):
        find(held, "1")


def test_an_unknown_id_points_to_the_full_listing():
    with pytest.raises(ApprovalError, match=r"no approval 'zz' in the agents listed: see `kaos approvals list --all`"):
        find(held_approvals("team", {"a": [approval("1")]}), "zz")


@pytest.mark.parametrize("expires_at, shown", [
    ("2025-01-01T12:04:05+00:00", "4m 05s"), ("2025-01-01T12:04:05Z", "4m 05s"),
    ("2025-01-01T14:30:00+00:00", "2h 30m"), ("2025-01-01T11:00:00+00:00", "expired"), (None, "-"), ("soon", "-"),
])
def test_time_left(expires_at, shown):
    assert time_left(expires_at, NOW) == shown


def test_the_table_shows_time_left_when_pending_and_who_decided_otherwise():
    held = held_approvals("team", {"ops": [
        approval("p1"),
        approval("d1", status="rejected", decided_by="alice", reason="not on Fridays", requested_at="2025-01-01T11:00"),
    ]})
    header, decided, pending = table(held, NOW).splitlines()
    assert header.split() == ["ID", "AGENT", "TOOL", "ARGUMENTS", "SESSION", "STATUS", "LEFT", "/", "DECIDED", "BY"]
    assert decided.split()[:6] == ["d1", "ops", "delete_file", '{"path":"/tmp/x"}', "s1", "rejected"]
    assert decided.endswith("alice (not on Fridays)")
    assert pending.split()[-3:] == ["pending", "4m", "05s"]
    assert table([], NOW) == "No approvals found."


def test_the_commands_parse():
    listing = parse(["approvals", "list", "--all", "-n", "team"])
    assert (listing.run, listing.all, listing.namespace) == (cmd_approvals_list, True, "team")
    decision = parse(["approvals", "reject", "a1", "--reason", "too risky", "--agent", "ops"])
    assert (decision.run, decision.decision, decision.id, decision.reason, decision.agent) == (
        cmd_approvals_decide, "reject", "a1", "too risky", "ops")

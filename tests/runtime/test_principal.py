"""core/principal.py, pure: principals' texts, the entries of AUTH_ADMINS and TOOL_APPROVAL_APPROVERS
(and that the Agent CRD's pattern accepts the same), the rules who may read and decide, and the
signed on-behalf-of header (what a peer trusts, and everything it ignores)."""

from __future__ import annotations

import re

import pytest

from kaos.crds import load_schemas
from kaos.settings import Settings
from kaos_runtime.core.on_behalf import WINDOW_SECONDS, Assertion, sign, verify
from kaos_runtime.core.principal import Access, Principal, element, entries, parse, relayed
from kaos_runtime.core.settings import AgentSettings, ConfigError

NOW = 1_700_000_000.0
KEY = "sk-coordinator-key"


def test_texts_and_parsing():
    assert Principal("key:3", "key", ("key:1",)).text == "key:3 via key:1"
    assert Principal().text == "anonymous" and Principal().anonymous
    assert parse("key:3 via key:1 via key:7") == Principal("key:3", "none", ("key:1", "key:7"))
    for bad in ("", "bob", "key:1,key:2", "key:1;t=1", "key:1  via key:2", "user:a b", "x" * 2000):
        assert parse(bad) is None, bad
    assert element("user", "a b,c;d%") == "user:a%20b%2Cc%3Bd%25"  # one element whatever a subject holds
    assert parse(element("agent", "evil via key:1")).via == ()


ENTRIES = {"key:1": True, "key:12 via key:3": True, "user:alice@example.com": True,
           "user:a%20b via key:2 via key:1": True, "key:0": False, "anonymous": False, "bob": False,
           "key:1 via anonymous": False, "agent:x": False, "user:a b": False, "key:1 via": False}


@pytest.mark.parametrize("entry, valid", ENTRIES.items())
def test_entries_in_the_runtime_and_the_crd_alike(entry, valid):
    spec = load_schemas(Settings().crd_dir)["Agent"]["properties"]["spec"]["properties"]
    patterns = [spec["approval"]["properties"]["approvers"]["items"]["pattern"],
                spec["auth"]["properties"]["admins"]["items"]["pattern"]]
    assert all(bool(re.search(pattern, entry)) == valid for pattern in patterns)
    if valid:
        assert entries(f" {entry} ,{entry}", "TOOL_APPROVAL_APPROVERS") == (entry,)
    else:
        with pytest.raises(ValueError, match=f"TOOL_APPROVAL_APPROVERS: {re.escape(repr(entry))} is not a principal"):
            entries(entry, "TOOL_APPROVAL_APPROVERS")


def test_grants_need_authentication():
    for env in ({"AUTH_ADMINS": "key:1"}, {"TOOL_APPROVAL_APPROVERS": "key:2"}):
        with pytest.raises(ConfigError, match="principals, but authentication is off"):
            AgentSettings.from_env(env)
    settings = AgentSettings.from_env({"AUTH_API_KEYS": "a,b", "AUTH_ADMINS": "key:1",
                                       "TOOL_APPROVAL_APPROVERS": "key:2, key:3 via key:1"})
    assert settings.auth.admins == ("key:1",) and settings.approval.approvers == ("key:2", "key:3 via key:1")


def test_reading_is_the_owners_or_an_admins():
    access = Access(enabled=True, admins=("key:9",))
    alice, bob, admin = Principal("key:1", "key"), Principal("key:2", "key"), Principal("key:9", "key")
    assert access.may_read(alice, "key:1") and not access.may_read(bob, "key:1") and access.may_read(admin, "key:1")
    relayed_alice = Principal("key:1", "key", ("key:2",))  # the coordinator's key:1, not this agent's
    assert not access.may_read(relayed_alice, "key:1") and access.may_read(relayed_alice, "key:1 via key:2")
    assert not access.is_admin(Principal("key:9", "key", ("key:1",)))
    assert access.owner(alice) == "key:1" and Access().owner(alice) == "anonymous"
    assert Access().may_read(Principal(), "key:1")  # open: everyone shares everything


def test_deciding_needs_a_grant_and_is_never_the_requesters():
    anyone, listed = Access(enabled=True), Access(enabled=True, approvers=("key:3", "key:2 via key:1"))
    alice, bob, carol = Principal("key:1", "key"), Principal("key:2", "key"), Principal("key:3", "key")
    assert "the requester of a call cannot decide it" in anyone.may_decide(alice, "key:1")
    assert anyone.may_decide(bob, "key:1") is None
    refused = listed.may_decide(bob, "key:1")
    assert "not one of the approvers (spec.approval.approvers, TOOL_APPROVAL_APPROVERS)" in refused
    assert listed.may_decide(carol, "key:1") is None
    assert listed.may_decide(Principal("key:2", "key", ("key:1",)), "key:1") is None
    stranger = Principal("anonymous", "key", ("key:1",))
    assert "anonymous caller" in anyone.may_decide(stranger, "key:1") and anyone.may_list_approvals(stranger)
    assert Access().may_decide(Principal(), "anonymous") is None  # open: as before
    assert listed.may_see_approval(alice, "key:1") and listed.may_see_approval(carol, "key:1")
    assert not listed.may_see_approval(bob, "key:1")


def test_on_behalf_of_is_trusted_only_signed_for_this_agent_with_the_credential_and_recent():
    value = sign("key:3 via key:5", (), KEY, "worker", NOW)
    assert re.fullmatch(r"key:3 via key:5;g=;t=1700000000;sig=[0-9a-f]{64}", value)
    assert verify(value, KEY, "worker", NOW + WINDOW_SECONDS) == Assertion("key:3 via key:5")
    ignored = [
        verify(value, "another-key", "worker", NOW),  # signed with another credential
        verify(value, KEY, "other-agent", NOW),  # for another agent
        verify(value, KEY, "worker", NOW + WINDOW_SECONDS + 1),  # too old
        verify(value, KEY, "worker", NOW - WINDOW_SECONDS - 1),  # from the future
        verify(value.replace("key:3", "key:4"), KEY, "worker", NOW),  # another person
        verify(value.replace("t=1700000000", "t=1700000001"), KEY, "worker", NOW),
        verify("key:3", KEY, "worker", NOW),  # unsigned
        verify("key:3;g=;t=1700000000;sig=", KEY, "worker", NOW),
        verify(value, "", "worker", NOW),  # no credential: nothing to verify with
        verify(sign("bob,key:1", (), KEY, "worker", NOW), KEY, "worker", NOW),  # not a principal
    ]
    assert ignored == [None] * len(ignored)
    assert relayed("key:3 via key:5", "key:1", "key") == Principal("key:3", "key", ("key:5", "key:1"))


def test_the_assertion_carries_the_groups_and_signs_them():
    value = sign("user:alice", {"group:eng", "group:approvers"}, KEY, "worker", NOW)
    assert value.startswith("user:alice;g=group:approvers,group:eng;t=1700000000;sig=")
    assert verify(value, KEY, "worker", NOW) == Assertion("user:alice", frozenset({"group:eng", "group:approvers"}))
    tampered = [
        value.replace("g=group:approvers,group:eng", "g=group:approvers,group:eng,group:admins"),  # a group added
        value.replace("g=group:approvers,group:eng", "g=group:eng"),  # one taken away
        value.replace("g=group:approvers,group:eng", "g=group:approvers;group:eng"),  # not a list of groups
        sign("user:alice", {"key:1"}, KEY, "worker", NOW),  # a "group" that is no group
        sign("user:alice", {"group:" + "x" * 5000}, KEY, "worker", NOW),  # too long
    ]
    assert [verify(text, KEY, "worker", NOW) for text in tampered] == [None] * len(tampered)
    assert relayed("user:alice", "key:1", "key", frozenset({"group:eng"})) == \
        Principal("user:alice", "key", ("key:1",), frozenset({"group:eng"}))

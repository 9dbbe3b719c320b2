"""Who a request acts for, and what that principal may read and decide (pure; docs/runtime.md,
"Authentication" and "Ownership").

A principal's text is the person a request acts for, as this agent knows them, followed for a
delegated request by each principal it came through, ``" via "`` between them:

- ``key:<n>``: the n-th of the agent's API keys (``AUTH_API_KEYS``);
- ``user:<name>``: an access token of the OIDC issuer, by its user claim (``sub`` by default; it
  carries the groups of the groups claim, ``group:<name>`` each: core/oidc.py);
- ``anonymous``: nobody authenticated (an open agent's caller, or an open coordinator's);
- ``key:3 via key:1``: the coordinator's caller ``key:3`` (a key of the coordinator), relayed by
  the coordinator that authenticated here with this agent's ``key:1``; a chain A -> B -> C
  reaches C as ``key:3 via key:1 via key:7``.

An element is ``anonymous`` or ``<kind>:<name>``; a name never holds white space, ``,``, ``;`` or
``%`` unescaped (``element`` percent-encodes them), so a principal's text is one entry of a comma
list and one value of the on-behalf-of header. An entry of a list of principals (admins,
approvers, a ``spec.access`` rule's) is a principal's text or ``group:<name>``, which names every
user whose token lists the group: one this agent authenticated, or one a coordinator relayed with
a signed assertion that carries the group; ``matches`` is the one place
entries meet principals.

The on-behalf-of header (core/on_behalf.py) carries the person and their groups through a
delegation, signed with the credential the delegation authenticates with.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote

ANONYMOUS = "anonymous"
VIA = " via "
MAX_PRINCIPAL_CHARS = 1024  # longer texts are not principals (a header, a chain of hops)
_ELEMENT = re.compile(r"anonymous|[a-z][a-z0-9-]*:[!-~]+")  # and no `,` or `;`
_ESCAPED = re.compile(r"[^!-~]|[,;%]")
# What an entry of AUTH_ADMINS or TOOL_APPROVAL_APPROVERS names, each element (the CRD's pattern too).
_ENTRY_ELEMENT = re.compile(r"key:[1-9][0-9]*|user:[!-+\--:<-~]+")
_GROUP_ENTRY = re.compile(r"group:[!-+\--:<-~]+")


@dataclass(frozen=True)
class Principal:
    """The person a request acts for (``id``), how this agent authenticated the request
    (``method``: ``key``, ``user``, or ``none`` for an open agent, whose callers' words are not
    verified), who relayed the person, first hop first (``via``: the last one is the
    principal this agent authenticated), and the person's groups (``group:<name>`` each: a
    user's token's, or, for a relayed person, those the verified assertion carried)."""

    id: str = ANONYMOUS
    method: str = "none"
    via: tuple[str, ...] = ()
    groups: frozenset[str] = frozenset()

    @property
    def text(self) -> str:
        """What memory, approvals and logs record: ``key:3 via key:1``."""
        return VIA.join((self.id, *self.via))

    @property
    def anonymous(self) -> bool:
        return self.id == ANONYMOUS


def element(kind: str, name: str) -> str:
    """``<kind>:<name>`` with what a principal's text cannot hold percent-encoded."""
    return f"{kind}:{_ESCAPED.sub(lambda match: quote(match.group(), safe=''), name)}"


def parse(text: str) -> Principal | None:
    """The principal a text names (its method unknown: ``none``); None when it is not one."""
    if not text or len(text) > MAX_PRINCIPAL_CHARS:
        return None
    parts = text.split(VIA)
    if not all(_ELEMENT.fullmatch(part) and "," not in part and ";" not in part for part in parts):
        return None
    return Principal(parts[0], "none", tuple(parts[1:]))


def entries(value: str, variable: str) -> tuple[str, ...]:
    """A comma list of principals (``AUTH_ADMINS``, ``TOOL_APPROVAL_APPROVERS``), each once;
    ValueError naming ``variable`` and the wrong entry."""
    found = tuple(dict.fromkeys(part.strip() for part in value.split(",") if part.strip()))
    for entry in found:
        if problem := entry_problem(entry):
            raise ValueError(f"{variable}: {problem}")
    return found


def entry_problem(entry: str) -> str | None:
    """Why ``entry`` is not an entry of a list of principals; None when it is one."""
    if len(entry) <= MAX_PRINCIPAL_CHARS and (_GROUP_ENTRY.fullmatch(entry)
                                              or all(map(_ENTRY_ELEMENT.fullmatch, entry.split(VIA)))):
        return None
    return (f"{entry!r} is not a principal (key:<n>, user:<name>, group:<name>, or <principal> via "
            "<principal> for a caller relayed by a coordinator)")


def matches(entry: str, who: Principal) -> bool:
    """Whether a listed principal (an admin, an approver) is ``who``: the same text, person and
    route (``key:3 via key:1`` is not this agent's own ``key:3``), or one of the person's groups
    (their token's, or those a verified on-behalf-of assertion carried)."""
    return entry == who.text or (entry.startswith("group:") and entry in who.groups)


@dataclass(frozen=True)
class Access:
    """The rules of one agent. ``enabled``: authentication is on (``AUTH_API_KEYS`` or OIDC);
    off, every caller is anonymous and may read and decide everything. ``admins`` may read every
    session, memory event and approval (``AUTH_ADMINS``). ``approvers``, when listed, are the only
    principals that may decide (``TOOL_APPROVAL_APPROVERS``). ``rules``: ``spec.access``
    (``ACCESS_RULES``, core/grants.py), (verbs, entries) each; None: no verb needs a grant."""

    enabled: bool = False
    admins: tuple[str, ...] = ()
    approvers: tuple[str, ...] = ()
    rules: tuple[tuple[frozenset[str], tuple[str, ...]], ...] | None = None

    def granted(self, who: Principal, verb: str) -> bool:
        """Whether ``spec.access`` grants ``who`` the verb (an admin holds every verb)."""
        if self.rules is None or not self.enabled or self.is_admin(who):
            return True
        return any((verb in verbs or "admin" in verbs) and any(matches(entry, who) for entry in entries)
                   for verbs, entries in self.rules)

    def grant_refusal(self, who: Principal, verbs: tuple[str, ...], agent: str) -> str | None:
        """None when ``who`` holds one of the grants; else a 403's detail naming them."""
        if not verbs or any(self.granted(who, verb) for verb in verbs):
            return None
        named = " or ".join(repr(verb) for verb in verbs)
        return (f"{who.text} may not {' or '.join(verbs)} on agent {agent}: no rule of its spec.access "
                f"grants {named} to this user, one of its groups or this principal")

    def owner(self, who: Principal) -> str:
        """Whom a session or task ``who`` starts belongs to: ``who`` with authentication; without
        it, everyone (``anonymous``), so every caller shares it."""
        return who.text if self.enabled else ANONYMOUS

    def is_admin(self, who: Principal) -> bool:
        """Listed in ``spec.auth.admins``, or granted ``admin`` by ``spec.access``."""
        return self.enabled and not who.anonymous and (
            any(matches(entry, who) for entry in self.admins)
            or (self.rules is not None and any("admin" in verbs and any(matches(entry, who) for entry in entries)
                                               for verbs, entries in self.rules)))

    def may_read(self, who: Principal, owner: str) -> bool:
        """A session (and its events, its A2A tasks) owned by ``owner``."""
        return not self.enabled or owner == who.text or self.is_admin(who)

    def may_list_approvals(self, who: Principal) -> str | None:
        """None when ``who`` may list approvals at all; else why not (a 403's detail)."""
        if self.enabled and who.anonymous:
            return (f"{who.text}: an anonymous caller (relayed by a coordinator without authentication) "
                    "can neither list nor decide approvals on an agent with authentication")
        return None

    def may_decide(self, who: Principal, requester: str) -> str | None:
        """None when ``who`` may decide a call ``requester`` asked for; else why not (a 403's detail)."""
        if not self.enabled:
            return None
        refused = self.may_list_approvals(who)
        if refused is not None:
            return refused
        if requester == who.text:
            return (f"{who.text} asked for this call: with authentication on, the requester of a call "
                    "cannot decide it; another principal must")
        if self.approvers and not any(matches(entry, who) for entry in self.approvers):
            return (f"{who.text} may not decide approvals here: it is not one of the approvers "
                    "(spec.approval.approvers, TOOL_APPROVAL_APPROVERS)")
        if not self.granted(who, "approve"):
            return (f"{who.text} may not approve here: no rule of the agent's spec.access grants 'approve' "
                    "to this user, one of its groups or this principal")
        return None

    def may_see_approval(self, who: Principal, requester: str) -> bool:
        """An approval shows to its requester (their session's), to those who may decide it, to admins."""
        return (not self.enabled or requester == who.text or self.is_admin(who)
                or self.may_decide(who, requester) is None)


def relayed(person: str, by: str, method: str, groups: frozenset[str] = frozenset()) -> Principal:
    """The principal a verified on-behalf-of assertion (core/on_behalf.py) makes: ``person`` with
    the ``groups`` it carried, via ``by``, the principal this agent authenticated (``method``)."""
    named = parse(person) or Principal()
    return Principal(named.id, method, (*named.via, by), groups)

"""``spec.access``: which users, groups and principals may do what on an agent (pure;
docs/security.md, "Who may do what").

``ACCESS_RULES`` is the rules as JSON, a list of ``{"verbs": [...], "users": [...], "groups":
[...], "principals": [...]}``: ``users`` are user names (the OIDC user claim), ``groups`` group
names (the groups claim), ``principals`` entries of core/principal.py (``key:1``,
``user:alice via key:1``). A rule grants its verbs to each of them. ``rules`` turns the JSON
into what ``principal.Access.rules`` holds; ``verbs_of`` says which verbs a request needs one of;
``held`` which verbs a principal holds (``GET /access/me``).
"""

from __future__ import annotations

import json

from .principal import Access, Principal, element, entry_problem

VERBS = ("chat", "read", "approve", "admin")
FIELDS = ("verbs", "users", "groups", "principals")
Rules = tuple[tuple[frozenset[str], tuple[str, ...]], ...]


def rules(value: str) -> Rules | None:
    """The rules of ``ACCESS_RULES`` (empty text: None, no spec.access); ValueError naming the
    rule and the field a mistake is in."""
    if not value.strip():
        return None
    try:
        given = json.loads(value)
    except ValueError:
        raise ValueError("ACCESS_RULES is not JSON (a list of {verbs, users, groups, principals})") from None
    if not isinstance(given, list):
        raise ValueError("ACCESS_RULES must be a JSON list of rules")
    return tuple(_rule(number, rule) for number, rule in enumerate(given))


def _rule(number: int, rule: object) -> tuple[frozenset[str], tuple[str, ...]]:
    where = f"ACCESS_RULES[{number}]"
    if not isinstance(rule, dict):
        raise ValueError(f"{where} must be an object with verbs and users, groups or principals")
    unknown = sorted(set(rule) - set(FIELDS))
    if unknown:
        raise ValueError(f"{where}: unknown field {unknown[0]!r} (a rule has {', '.join(FIELDS)})")
    lists = {}
    for field in FIELDS:
        items = rule.get(field, [])
        if not isinstance(items, list) or not all(isinstance(item, str) and item for item in items):
            raise ValueError(f"{where}.{field} must be a list of non-empty strings")
        lists[field] = items
    if not lists["verbs"]:
        raise ValueError(f"{where}.verbs is empty: name what the rule grants ({', '.join(VERBS)})")
    for verb in lists["verbs"]:
        if verb not in VERBS:
            raise ValueError(f"{where}.verbs: {verb!r} is not a verb ({', '.join(VERBS)})")
    entries = ([element("user", name) for name in lists["users"]]
               + [element("group", name) for name in lists["groups"]] + lists["principals"])
    for entry in lists["principals"]:
        if problem := entry_problem(entry):
            raise ValueError(f"{where}.principals: {problem}")
    if not entries:
        raise ValueError(f"{where} grants to no one: list users, groups or principals")
    return frozenset(lists["verbs"]), tuple(entries)


def verbs_of(method: str, path: str) -> tuple[str, ...]:
    """The verbs of which a request needs one: ``chat`` to run the agent (chat completions, A2A,
    its MCP tool), ``read`` for its memory, ``approve`` to decide (``read`` or ``approve`` to
    list approvals), ``admin`` for the audit trail; none for what any authenticated caller may
    ask (the model list)."""
    if path == "/v1/chat/completions" or path == "/a2a" or path.startswith(("/a2a/", "/mcp")):
        return ("chat",)
    if path.startswith("/memory/"):
        return ("read",)
    if path.startswith("/approvals/"):
        return ("approve",)
    if path == "/approvals":
        return ("approve",) if method == "POST" else ("read", "approve")
    if path == "/audit":
        return ("admin",)
    return ()


def held(access: Access, who: Principal) -> tuple[str, ...]:
    """The verbs ``who`` holds on an agent with ``access``, as the agent's own checks decide them
    (so a client can tell in advance which calls it would be refused): ``chat`` and ``read`` by
    the grants; ``approve`` when ``who`` may decide another principal's call (the grant, the
    approvers, not anonymous); ``admin`` when the audit trail and every session are theirs to read
    (everyone's on an agent without authentication)."""
    holds = {"chat": access.granted(who, "chat"), "read": access.granted(who, "read"),
             "approve": access.may_decide(who, requester="") is None,
             "admin": not access.enabled or access.is_admin(who)}
    return tuple(verb for verb in VERBS if holds[verb])

"""Who may start, continue and read which session: the rules of core/principal.py over the owners
the memory keeps (docs/runtime.md, "Sessions"). Without authentication every caller shares every
session, and nothing is claimed."""

from __future__ import annotations

from ..core.principal import Access, Principal
from . import Memory


def no_session(session_id: str) -> str:
    """What a caller hears of a session it may not use: the same as of one that does not exist."""
    return f"no session {session_id!r}"


class Sessions:
    def __init__(self, memory: Memory, access: Access) -> None:
        self.memory = memory
        self.access = access

    async def enter(self, session_id: str, who: Principal) -> bool:
        """May ``who`` run a turn in this session? A new one becomes theirs, atomically; another's
        is not theirs to continue, not even an admin's (admins read)."""
        if not self.access.enabled:
            return True
        return await self.memory.claim(session_id, who.text) == who.text

    async def readable(self, session_id: str, who: Principal) -> bool:
        """Is there such a session, and may ``who`` read it?"""
        if not self.access.enabled:
            return True
        owner = await self.memory.owner(session_id)
        return owner is not None and self.access.may_read(who, owner)

    def owner_filter(self, who: Principal) -> str | None:
        """Whose sessions ``who`` lists: their own; every one (None) on an open agent and for an admin."""
        return None if not self.access.enabled or self.access.is_admin(who) else who.text

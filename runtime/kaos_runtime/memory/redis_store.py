"""The ``redis`` backend: events in Redis, shared by every replica of an agent.

Keys (``P`` is ``MEMORY_KEY_PREFIX``, by default ``kaos:agent:<AGENT_NAME>``; the agent
chart sets ``kaos:<namespace>:agent:<name>``):

- ``P:sessions``   sorted set: session id -> sequence number of its latest event (least
                   recently active first, as the local backend orders them);
- ``P:seq``        counter: one sequence number per event, across sessions and replicas;
- ``P:session:<id>`` list: the session's events in the order they were recorded, each stored
                   as ``<seq>\\t<event_type>\\t<event JSON>``.
- ``P:owner:<id>`` string: the session's owner (with authentication on), set once (``claim``),
                   expiring and dropped with the session's list.
- ``P:lock:<name>:<id>`` string: a lock on the session (``lock``: SET NX with an expiry; ``unlock``
                   deletes it only while it holds the same token).

Every operation is one Lua script (atomic in Redis, one round trip): a write appends, trims
the list to ``MEMORY_MAX_SESSION_EVENTS`` (oldest first) and drops the least recently active
sessions beyond ``MEMORY_MAX_SESSIONS``, so several replicas writing at once never lose an
event or break the bounds; a read sees one consistent state. With ``MEMORY_TTL_SECONDS``
every write sets the TTL of its session and of the two shared keys, so an idle session
expires in Redis and is then dropped from ``P:sessions``. At most
``2 * MEMORY_MAX_SESSIONS + 2`` keys per agent. A claim is one script too: of two callers claiming
one new id at once, one owns it; a claimed session joins ``P:sessions`` (with no events yet) and
counts against the bound.

Writes are a group commit: ``record`` queues the event, and a writer task sends whatever is
queued as one batch, one batch on the wire at a time, in order: one call of the record script
(one EVALSHA, every event of the batch appended in order as if each were recorded alone) for
all the events that arrived meanwhile, from every request. A request does not wait for its
first events; they are sent within ``FLUSH_DELAY`` (5 ms), or at once with the event that ends
a turn (``agent_response``), which the request does wait for, with every event queued before
it: an answer is only given once its turn is stored, and a quick turn costs one round trip.
Reads (``context_events``, ``events``, ``sessions``) first wait for what is queued to be written, so
this process always reads its own writes.

When Redis cannot be reached, each call raises ``MemoryUnavailable``; the session of the
failed call is remembered (bounded) and an ``error`` event is written to it as soon as Redis
answers again. redis-py reconnects by itself, so nothing needs a restart.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import OrderedDict

from redis.exceptions import RedisError

from ..core.redis_client import describe_url, redis_client
from ..core.settings import MemorySettings
from . import ANONYMOUS, CONTEXT_EVENTS, Memory, MemoryUnavailable, make_event

log = logging.getLogger("kaos_runtime.memory")

# Outages remembered to be written as `error` events once Redis is back (one per session).
MAX_PENDING_OUTAGES = 100
# The event that ends a turn: recording it waits until it (and all before it) is stored.
TURN_END = "agent_response"
# Other events wait at most this long to be sent, so that a quick turn is one round trip.
FLUSH_DELAY = 0.005

# Drops sessions whose list and owner expired (TTL) from the sorted set: they are always its
# oldest members, because every write refreshes the TTL of the session it touches.
_PRUNE = """
local function prune(sessions, prefix, owner_prefix, ttl)
  if ttl <= 0 then return end
  while true do
    local first = redis.call('ZRANGE', sessions, 0, 0)
    if #first == 0 or redis.call('EXISTS', prefix .. first[1], owner_prefix .. first[1]) > 0 then return end
    redis.call('ZREM', sessions, first[1])
  end
end
-- Drops the least recently active sessions beyond the bound, with their owners.
local function evict(sessions, prefix, owner_prefix, max_sessions)
  local extra = redis.call('ZCARD', sessions) - max_sessions
  if extra > 0 then
    local dropped = redis.call('ZPOPMIN', sessions, extra)
    for j = 1, #dropped, 2 do redis.call('DEL', prefix .. dropped[j], owner_prefix .. dropped[j]) end
  end
end
"""

# A batch of events, in order (the group commit: one script for every event queued meanwhile,
# from any session). KEYS: sessions, seq, then the list of each session of the batch. ARGV: list
# prefix, max sessions, max events per session, ttl in ms, owner prefix, then two per event: the
# index in KEYS of its session's list and `<event type>\t<event JSON>`. Each event gets the next
# sequence number and is appended, its list trimmed and the least recently active sessions beyond
# the bound dropped, exactly as if it were recorded alone. Returns the last sequence number.
_RECORD = _PRUNE + """
local prefix, ttl, owner_prefix = ARGV[1], tonumber(ARGV[4]), ARGV[5]
local max_sessions, max_events = tonumber(ARGV[2]), tonumber(ARGV[3])
local count = (#ARGV - 5) / 2
local seq = redis.call('INCRBY', KEYS[2], count) - count
for i = 6, #ARGV, 2 do
  local key = KEYS[tonumber(ARGV[i])]
  prune(KEYS[1], prefix, owner_prefix, ttl)
  seq = seq + 1
  redis.call('RPUSH', key, seq .. '\\t' .. ARGV[i + 1])
  redis.call('LTRIM', key, -max_events, -1)
  local id = string.sub(key, #prefix + 1)
  redis.call('ZADD', KEYS[1], seq, id)
  evict(KEYS[1], prefix, owner_prefix, max_sessions)
  if ttl > 0 then
    redis.call('PEXPIRE', key, ttl)
    redis.call('PEXPIRE', owner_prefix .. id, ttl)
  end
end
if ttl > 0 then
  redis.call('PEXPIRE', KEYS[1], ttl)
  redis.call('PEXPIRE', KEYS[2], ttl)
end
return seq
"""

# Whether a session is the owner's ('' : anyone's); no owner recorded: anonymous's.
_OWNED = """
local function owned(owner_prefix, id, owner, anonymous)
  return owner == '' or (redis.call('GET', owner_prefix .. id) or anonymous) == owner
end
local function sessions_of(sessions, owner_prefix, owner, anonymous)
  local found = {}
  for _, id in ipairs(redis.call('ZRANGE', sessions, 0, -1)) do
    if owned(owner_prefix, id, owner, anonymous) then found[#found + 1] = id end
  end
  return found
end
"""

# KEYS: sessions. ARGV: list prefix, limit (-1: all), session id ('' : every session), event
# type ('': any), ttl in ms, owner prefix, owner ('': any), anonymous. Returns {total, entry...}:
# the newest `limit` matching entries, oldest first.
_EVENTS = _PRUNE + _OWNED + """
prune(KEYS[1], ARGV[1], ARGV[6], tonumber(ARGV[5]))
local limit, wanted = tonumber(ARGV[2]), ARGV[4]
local sessions
if ARGV[3] ~= '' then sessions = {ARGV[3]} else sessions = sessions_of(KEYS[1], ARGV[6], ARGV[7], ARGV[8]) end
local total, picked = 0, {}
for _, id in ipairs(sessions) do
  local key = ARGV[1] .. id
  local entries
  if wanted == '' then
    total = total + redis.call('LLEN', key)
    if limit < 0 then entries = redis.call('LRANGE', key, 0, -1)
    elseif limit > 0 then entries = redis.call('LRANGE', key, -limit, -1)
    else entries = {} end
  else
    entries = {}
    for _, entry in ipairs(redis.call('LRANGE', key, 0, -1)) do
      local kind = string.match(entry, '^%d+\\t([^\\t]*)\\t')
      if kind == wanted then
        total = total + 1
        entries[#entries + 1] = entry
      end
    end
    if limit >= 0 and #entries > limit then
      local kept = {}
      for i = #entries - limit + 1, #entries do kept[#kept + 1] = entries[i] end
      entries = kept
    end
  end
  for _, entry in ipairs(entries) do picked[#picked + 1] = entry end
end
local function seq_of(entry) return tonumber(string.match(entry, '^(%d+)')) end
if #sessions > 1 then
  table.sort(picked, function(a, b) return seq_of(a) < seq_of(b) end)
end
local result = {total}
local first = 1
if limit >= 0 and #picked > limit then first = #picked - limit + 1 end
for i = first, #picked do result[#result + 1] = picked[i] end
return result
"""

# KEYS: sessions. ARGV: list prefix, ttl in ms, owner prefix, owner ('': any), anonymous.
_SESSIONS = _PRUNE + _OWNED + """
prune(KEYS[1], ARGV[1], ARGV[3], tonumber(ARGV[2]))
return sessions_of(KEYS[1], ARGV[3], ARGV[4], ARGV[5])
"""

# KEYS: sessions, seq, the session's owner, its list. ARGV: list prefix, owner prefix, session
# id, owner, anonymous, max sessions, ttl in ms. The session's owner: the one it has, else the
# one given, recorded now (anonymous for a session with events and none: recorded while
# authentication was off); a new session joins the sessions, with no events yet.
_CLAIM = _PRUNE + """
local current = redis.call('GET', KEYS[3])
if current then return current end
local ttl = tonumber(ARGV[7])
prune(KEYS[1], ARGV[1], ARGV[2], ttl)
if redis.call('EXISTS', KEYS[4]) == 1 then current = ARGV[5] else current = ARGV[4] end
redis.call('SET', KEYS[3], current)
if ttl > 0 then redis.call('PEXPIRE', KEYS[3], ttl) end
if not redis.call('ZSCORE', KEYS[1], ARGV[3]) then
  redis.call('ZADD', KEYS[1], redis.call('INCR', KEYS[2]), ARGV[3])
  evict(KEYS[1], ARGV[1], ARGV[2], tonumber(ARGV[6]))
  if ttl > 0 then
    redis.call('PEXPIRE', KEYS[1], ttl)
    redis.call('PEXPIRE', KEYS[2], ttl)
  end
end
return current
"""

# KEYS: sessions, the session's owner. ARGV: list prefix, owner prefix, ttl in ms, session id,
# anonymous. The owner; false when there is no such session.
_OWNER = _PRUNE + """
prune(KEYS[1], ARGV[1], ARGV[2], tonumber(ARGV[3]))
if not redis.call('ZSCORE', KEYS[1], ARGV[4]) then return false end
return redis.call('GET', KEYS[2]) or ARGV[5]
"""

# KEYS: the session's list. ARGV: limit, the event types joined by ','. Returns the last `limit`
# entries of those types, oldest first.
_CONTEXT = """
local limit = tonumber(ARGV[1])
local turn = {}
for kind in string.gmatch(ARGV[2], '[^,]+') do turn[kind] = true end
local entries = redis.call('LRANGE', KEYS[1], 0, -1)
local found = {}
for i = #entries, 1, -1 do
  local kind = string.match(entries[i], '^%d+\\t([^\\t]*)\\t')
  if turn[kind] then
    table.insert(found, 1, entries[i])
    if #found >= limit then break end
  end
end
return found
"""

# KEYS: the lock. ARGV: the token. Deletes the lock only while this token holds it.
_UNLOCK = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


def _event_of(entry: str) -> dict:
    """``<seq>\\t<type>\\t<JSON>`` -> the event."""
    return json.loads(entry.split("\t", 2)[2])


def _entry(event: dict) -> str:
    """What a batch sends of an event: ``<type>\\t<JSON>`` (Redis puts the sequence number first)."""
    return event["event_type"] + "\t" + json.dumps(event, separators=(",", ":"))


def _settle(futures: list[asyncio.Future], error: BaseException | None) -> None:
    for future in futures:
        if not future.done():
            if error is None:
                future.set_result(None)
            else:
                future.set_exception(error)


class RedisMemory(Memory):
    backend = "redis"

    def __init__(self, config: MemorySettings, agent_name: str) -> None:
        super().__init__(config)
        self.prefix = config.key_prefix or f"kaos:agent:{agent_name}"
        self._sessions_key = f"{self.prefix}:sessions"
        self._seq_key = f"{self.prefix}:seq"
        self._list_prefix = f"{self.prefix}:session:"
        self._owner_prefix = f"{self.prefix}:owner:"
        self._ttl_ms = config.ttl_seconds * 1000
        self.client = redis_client(config.redis_url.get_secret_value(), config.redis_timeout)
        self.where = describe_url(self.client)
        self._record_script = self.client.register_script(_RECORD)
        self._events_script = self.client.register_script(_EVENTS)
        self._sessions_script = self.client.register_script(_SESSIONS)
        self._context_script = self.client.register_script(_CONTEXT)
        self._claim_script = self.client.register_script(_CLAIM)
        self._owner_script = self.client.register_script(_OWNER)
        self._unlock_script = self.client.register_script(_UNLOCK)
        self._outages: OrderedDict[str, str] = OrderedDict()  # session id -> what failed
        # The group commit: events queued, and who waits for them, until the writer takes them.
        self._queue: list[tuple[str, str]] = []  # (session id, `<type>\t<JSON>`)
        self._waiters: list[asyncio.Future] = []  # turn ends: told the outcome of their batch
        self._flushers: list[asyncio.Future] = []  # flush(): told once the batch is done
        self._due = asyncio.Event()  # the queue is to go now (a turn end, a flush, FLUSH_DELAY over)
        self._outages_due = False  # a read waits for the outage events to be written first
        self._timer: asyncio.TimerHandle | None = None
        self._writer: asyncio.Task | None = None  # sends the batches, one at a time, in order
        self._writing = False

    def session_key(self, session_id: str) -> str:
        return self._list_prefix + session_id

    async def close(self) -> None:
        await self.flush()
        if self._writer is not None:
            self._writer.cancel()
            await asyncio.gather(self._writer, return_exceptions=True)
            self._writer = None
        await self.client.aclose()

    async def flush(self, outages: bool = False) -> None:
        """Return once every event recorded so far is written (or failed: see MemoryUnavailable);
        with ``outages``, once the pending outage events are written too (or failed)."""
        outages = outages and bool(self._outages)
        if not (self._queue or self._writing or outages):
            return
        done = asyncio.get_running_loop().create_future()
        self._flushers.append(done)
        self._outages_due = self._outages_due or outages
        self._send_soon()
        await done

    async def check(self) -> None:
        try:
            await self.client.ping()
        except RedisError as error:
            raise self._unavailable("ping", error) from None

    def _unavailable(self, what: str, error: Exception, sessions=()) -> MemoryUnavailable:
        problem = f"agent memory unavailable: Redis at {self.where} ({what}): {type(error).__name__}: {error}"
        for session_id in sessions:
            self._outages[session_id] = problem
            self._outages.move_to_end(session_id)
        while len(self._outages) > MAX_PENDING_OUTAGES:
            self._outages.popitem(last=False)
        log.warning("%s", problem)
        return MemoryUnavailable(problem)

    async def _call(self, what: str, script, keys: list[str], args: list, session_id: str | None = None):
        """Run a script after the queued writes; a Redis failure becomes MemoryUnavailable
        (and a pending outage event for the session)."""
        await self.flush(outages=True)
        try:
            return await script(keys=keys, args=args)
        except RedisError as error:
            raise self._unavailable(what, error, [session_id] if session_id else []) from None

    async def _record(self, session_id: str, event: dict) -> None:
        self._queue.append((session_id, _entry(event)))
        if event["event_type"] == TURN_END:
            done = asyncio.get_running_loop().create_future()
            self._waiters.append(done)
            self._send_soon()
            await done  # the outcome of the batch that took this event (and all before it)
        elif self._timer is None and not self._due.is_set():
            self._timer = asyncio.get_running_loop().call_later(FLUSH_DELAY, self._delay_over)

    def _delay_over(self) -> None:
        self._timer = None
        self._send_soon()

    def _send_soon(self) -> None:
        """Have the writer send the queue as soon as the batch on the wire (if any) is done."""
        self._due.set()
        if self._writer is None or self._writer.done():
            self._writer = asyncio.get_running_loop().create_task(self._write_batches())

    async def _write_batches(self) -> None:
        """The writer: takes everything queued as one batch when it is due, sends it, tells
        those who wait, and again; idle, it waits for the next batch due."""
        while True:
            await self._due.wait()
            self._due.clear()
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            batch, waiters, flushers = self._queue, self._waiters, self._flushers
            self._queue, self._waiters, self._flushers = [], [], []
            outages, self._outages_due = self._outages_due and bool(self._outages), False
            error: Exception | None = None
            self._writing = True
            try:
                if batch or outages:
                    await self._write(batch)
            except RedisError as failure:
                if batch:  # (outage events alone: the read that asked for them says it fails)
                    error = self._unavailable("record", failure, dict.fromkeys(session for session, _ in batch))
            except Exception as failure:  # not Redis's: said here, and to those who wait
                log.exception("agent memory: writing %d event(s) to Redis failed", len(batch))
                error = failure
            except BaseException:  # cancelled (close, or the loop ending): nobody is left waiting
                _settle(waiters, MemoryUnavailable("agent memory closed while writing"))
                _settle(flushers, None)
                raise
            finally:
                self._writing = False
            _settle(waiters, error)
            _settle(flushers, None)

    async def _write(self, batch: list[tuple[str, str]]) -> None:
        """One script for the batch, after an `error` event in each session that lost events to
        an outage (those are then forgotten). A Redis that lost the script (a restart) answers
        NOSCRIPT and is given it once."""
        outages = list(self._outages.items())
        if outages:
            batch = [(session, _entry(make_event(session, "error", f"{problem}; events of this session were not stored",
                                                  {"memory": "unavailable"})))
                     for session, problem in outages] + batch
        keys = [self._sessions_key, self._seq_key]
        args: list = [self._list_prefix, self.config.max_sessions, self.config.max_session_events, self._ttl_ms,
                      self._owner_prefix]
        index: dict[str, int] = {}
        for session, entry in batch:
            at = index.get(session)
            if at is None:
                keys.append(self._list_prefix + session)
                at = index[session] = len(keys)
            args.append(at)
            args.append(entry)
        await self._record_script(keys=keys, args=args)
        for session, problem in outages:
            if self._outages.get(session) is problem:
                del self._outages[session]

    async def _events(self, limit, session_id, event_type, owner):
        result = await self._call(
            "events", self._events_script, [self._sessions_key],
            [self._list_prefix, -1 if limit is None else limit, session_id or "", event_type or "", self._ttl_ms,
             self._owner_prefix, owner or "", ANONYMOUS],
        )
        return [_event_of(entry) for entry in result[1:]], int(result[0])

    async def _sessions(self, owner):
        return list(await self._call("sessions", self._sessions_script, [self._sessions_key],
                                     [self._list_prefix, self._ttl_ms, self._owner_prefix, owner or "", ANONYMOUS]))

    async def _claim(self, session_id: str, owner: str) -> str:
        return await self._call("claim a session", self._claim_script,
                                [self._sessions_key, self._seq_key, self._owner_prefix + session_id,
                                 self.session_key(session_id)],
                                [self._list_prefix, self._owner_prefix, session_id, owner, ANONYMOUS,
                                 self.config.max_sessions, self._ttl_ms])

    async def _owner(self, session_id: str) -> str | None:
        return await self._call("read a session's owner", self._owner_script,
                                [self._sessions_key, self._owner_prefix + session_id],
                                [self._list_prefix, self._owner_prefix, self._ttl_ms, session_id, ANONYMOUS])

    async def _context_events(self, session_id: str) -> list[dict]:
        entries = await self._call("context", self._context_script, [self.session_key(session_id)],
                                   [self.config.max_session_events, ",".join(CONTEXT_EVENTS)], session_id)
        return [_event_of(entry) for entry in entries]

    def _lock_key(self, session_id: str, name: str) -> str:
        return f"{self.prefix}:lock:{name}:{session_id}"

    async def _lock(self, session_id: str, name: str, token: str, seconds: float) -> bool:
        try:
            return bool(await self.client.set(self._lock_key(session_id, name), token, nx=True,
                                              px=max(1, int(seconds * 1000))))
        except RedisError as error:
            raise self._unavailable("lock", error) from None

    async def _unlock(self, session_id: str, name: str, token: str) -> None:
        try:
            await self._unlock_script(keys=[self._lock_key(session_id, name)], args=[token])
        except RedisError as error:
            raise self._unavailable("unlock", error) from None

"""The ``redis`` backend: events in Redis, shared by every replica of an agent.

Keys (``P`` is ``MEMORY_KEY_PREFIX``, by default ``kaos:agent:<AGENT_NAME>``; the agent
chart sets ``kaos:<namespace>:agent:<name>``):

- ``P:sessions``   sorted set: session id -> sequence number of its latest event (least
                   recently active first, as the local backend orders them);
- ``P:seq``        counter: one sequence number per event, across sessions and replicas;
- ``P:session:<id>`` list: the session's events in the order they were recorded, each stored
                   as ``<seq>\\t<event_type>\\t<event JSON>``.

Every operation is one Lua script (atomic in Redis, one round trip): a write appends, trims
the list to ``MEMORY_MAX_SESSION_EVENTS`` (oldest first) and drops the least recently active
sessions beyond ``MEMORY_MAX_SESSIONS``, so several replicas writing at once never lose an
event or break the bounds; a read sees one consistent state. With ``MEMORY_TTL_SECONDS``
every write sets the TTL of its session and of the two shared keys, so an idle session
expires in Redis and is then dropped from ``P:sessions``. At most
``MEMORY_MAX_SESSIONS + 2`` keys per agent.

Writes are pipelined (a group commit): ``record`` queues the event, and whatever is queued is
sent as one pipeline, in order, one batch on the wire at a time: one round trip for all the
events that arrived meanwhile, from every request. A request does not wait for its first
events; they are sent within ``FLUSH_DELAY`` (5 ms), or at once with the event that ends a
turn (``agent_response``), which the request does wait for, with every event queued before
it: an answer is only given once its turn is stored, and a quick turn costs one round trip.
Reads (``history``, ``events``, ``sessions``) first send what is queued, so this process
always reads its own writes.

When Redis cannot be reached, each call raises ``MemoryUnavailable``; the session of the
failed call is remembered (bounded) and an ``error`` event is written to it as soon as Redis
answers again. redis-py reconnects by itself, so nothing needs a restart.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import OrderedDict

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from ..settings import MemorySettings
from . import TURN_ROLES, Memory, MemoryUnavailable, make_event

log = logging.getLogger("kaos_runtime.memory")

# Outages remembered to be written as `error` events once Redis is back (one per session).
MAX_PENDING_OUTAGES = 100
# The event that ends a turn: recording it waits until it (and all before it) is stored.
TURN_END = "agent_response"
# Other events wait at most this long to be sent, so that a quick turn is one round trip.
FLUSH_DELAY = 0.005

# Drops sessions whose list expired (TTL) from the sorted set: they are always its oldest
# members, because every write refreshes the TTL of the session it touches.
_PRUNE = """
local function prune(sessions, prefix, ttl)
  if ttl <= 0 then return end
  while true do
    local first = redis.call('ZRANGE', sessions, 0, 0)
    if #first == 0 or redis.call('EXISTS', prefix .. first[1]) == 1 then return end
    redis.call('ZREM', sessions, first[1])
  end
end
"""

# KEYS: sessions, seq, the session's list. ARGV: list prefix, session id, event type, event
# JSON, max sessions, max events per session, ttl in ms.
_RECORD = _PRUNE + """
local ttl = tonumber(ARGV[7])
prune(KEYS[1], ARGV[1], ttl)
local seq = redis.call('INCR', KEYS[2])
redis.call('RPUSH', KEYS[3], seq .. '\\t' .. ARGV[3] .. '\\t' .. ARGV[4])
redis.call('LTRIM', KEYS[3], -tonumber(ARGV[6]), -1)
redis.call('ZADD', KEYS[1], seq, ARGV[2])
local extra = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[5])
if extra > 0 then
  local dropped = redis.call('ZPOPMIN', KEYS[1], extra)
  for i = 1, #dropped, 2 do redis.call('DEL', ARGV[1] .. dropped[i]) end
end
if ttl > 0 then
  redis.call('PEXPIRE', KEYS[3], ttl)
  redis.call('PEXPIRE', KEYS[1], ttl)
  redis.call('PEXPIRE', KEYS[2], ttl)
end
return seq
"""

# KEYS: sessions. ARGV: list prefix, limit (-1: all), session id ('' : every session), event
# type ('': any), ttl in ms. Returns {total, entry...}: the newest `limit` matching entries,
# oldest first.
_EVENTS = _PRUNE + """
prune(KEYS[1], ARGV[1], tonumber(ARGV[5]))
local limit, wanted = tonumber(ARGV[2]), ARGV[4]
local sessions
if ARGV[3] ~= '' then sessions = {ARGV[3]} else sessions = redis.call('ZRANGE', KEYS[1], 0, -1) end
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

# KEYS: sessions. ARGV: list prefix, ttl in ms.
_SESSIONS = _PRUNE + """
prune(KEYS[1], ARGV[1], tonumber(ARGV[2]))
return redis.call('ZRANGE', KEYS[1], 0, -1)
"""

# KEYS: the session's list. ARGV: limit, the turn event types joined by ','. Returns the last
# `limit` turn entries, oldest first.
_HISTORY = """
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


def _consume(future: asyncio.Future) -> None:
    """A write nobody waits for fails quietly here; its session gets an error event later."""
    if not future.cancelled():
        future.exception()


def _event_of(entry: str) -> dict:
    """``<seq>\\t<type>\\t<JSON>`` -> the event."""
    return json.loads(entry.split("\t", 2)[2])


def describe_url(client: aioredis.Redis) -> str:
    """Where Redis is, without credentials: ``host:port/db`` or the socket path."""
    kwargs = client.connection_pool.connection_kwargs
    if "path" in kwargs:
        return f"unix:{kwargs['path']}"
    return f"{kwargs.get('host', 'localhost')}:{kwargs.get('port', 6379)}/{kwargs.get('db', 0)}"


class RedisMemory(Memory):
    backend = "redis"

    def __init__(self, config: MemorySettings, agent_name: str) -> None:
        super().__init__(config)
        self.prefix = config.key_prefix or f"kaos:agent:{agent_name}"
        self._sessions_key = f"{self.prefix}:sessions"
        self._seq_key = f"{self.prefix}:seq"
        self._list_prefix = f"{self.prefix}:session:"
        self._ttl_ms = config.ttl_seconds * 1000
        timeout = config.redis_timeout
        # One retry on a fresh connection covers a pooled connection that Redis closed (a
        # restart); more retries would only make a client wait longer for its 503.
        self.client = aioredis.Redis.from_url(
            config.redis_url.get_secret_value().strip(), decode_responses=True,
            socket_timeout=timeout, socket_connect_timeout=timeout,
            retry=Retry(NoBackoff(), 1), retry_on_error=[RedisConnectionError, RedisTimeoutError],
        )
        self.where = describe_url(self.client)
        self._record_script = self.client.register_script(_RECORD)
        self._events_script = self.client.register_script(_EVENTS)
        self._sessions_script = self.client.register_script(_SESSIONS)
        self._history_script = self.client.register_script(_HISTORY)
        self._outages: OrderedDict[str, str] = OrderedDict()  # session id -> what failed
        self._queue: list[tuple[str, dict, asyncio.Future]] = []
        self._sending = asyncio.Lock()  # one batch on the wire at a time: the order is kept
        self._timer: asyncio.TimerHandle | None = None
        self._background: set[asyncio.Task] = set()

    def session_key(self, session_id: str) -> str:
        return self._list_prefix + session_id

    async def close(self) -> None:
        await self.flush()
        await self.client.aclose()

    async def flush(self) -> None:
        """Send what is queued, after any batch already on the wire; return once it is written."""
        await self._send_queued()
        while self._background:
            await asyncio.gather(*self._background, return_exceptions=True)

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
        await self.flush()
        try:
            if self._outages:
                await self._write_outages()
            return await script(keys=keys, args=args)
        except RedisError as error:
            raise self._unavailable(what, error, [session_id] if session_id else []) from None

    async def _send_queued(self) -> None:
        """Send everything queued as one batch (in the caller's task: no hop to another task)."""
        async with self._sending:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if not self._queue:
                return
            batch, self._queue = self._queue, []
            try:
                if self._outages:
                    await self._write_outages()
                await self._send(batch)
            except RedisError as error:
                failure = self._unavailable("record", error, dict.fromkeys(item[0] for item in batch))
                for _, _, done in batch:
                    if not done.done():
                        done.set_exception(failure)
            else:
                for _, _, done in batch:
                    if not done.done():
                        done.set_result(None)
            finally:
                if self._queue and self._timer is None:
                    self._schedule()

    async def _write_outages(self) -> None:
        """Record, in each session that lost events to an outage, an error event saying so."""
        while self._outages:
            session_id, problem = next(iter(self._outages.items()))
            event = make_event(session_id, "error", f"{problem}; events of this session were not stored",
                               {"memory": "unavailable"})
            await self._append(session_id, event)
            self._outages.pop(session_id, None)

    def _schedule(self) -> None:
        self._timer = asyncio.get_running_loop().call_later(FLUSH_DELAY, self._send_later)

    def _send_later(self) -> None:
        self._timer = None
        task = asyncio.get_running_loop().create_task(self._send_queued())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _send(self, batch: list) -> None:
        """One pipeline of EVALSHA calls. (Not redis-py's script registration in pipelines: it
        asks SCRIPT EXISTS before every pipeline, a second round trip; a Redis that lost the
        script, after a restart, answers NOSCRIPT and gets it once.)"""
        script = self._record_script
        for attempt in (1, 2):
            pipe = self.client.pipeline(transaction=False)
            for session_id, event, _ in batch:
                keys, args = self._record_call(session_id, event)
                pipe.evalsha(script.sha, len(keys), *keys, *args)
            try:
                await pipe.execute()
                return
            except NoScriptError:
                if attempt == 2:
                    raise
                script.sha = await self.client.script_load(script.script)

    def _record_call(self, session_id: str, event: dict) -> tuple[list[str], list]:
        keys = [self._sessions_key, self._seq_key, self.session_key(session_id)]
        args = [self._list_prefix, session_id, event["event_type"], json.dumps(event, separators=(",", ":")),
                self.config.max_sessions, self.config.max_session_events, self._ttl_ms]
        return keys, args

    async def _append(self, session_id: str, event: dict) -> None:
        await self._record_script(*self._record_call(session_id, event))

    async def _record(self, session_id: str, event: dict) -> None:
        done = asyncio.get_running_loop().create_future()
        done.add_done_callback(_consume)
        self._queue.append((session_id, event, done))
        if event["event_type"] == TURN_END:
            await self._send_queued()
            await done  # set by this send, or by the one on the wire that took it along
        elif self._timer is None:
            self._schedule()

    async def _events(self, limit, session_id, event_type):
        result = await self._call(
            "events", self._events_script, [self._sessions_key],
            [self._list_prefix, -1 if limit is None else limit, session_id or "", event_type or "", self._ttl_ms],
        )
        return [_event_of(entry) for entry in result[1:]], int(result[0])

    async def _sessions(self) -> list[str]:
        return list(await self._call("sessions", self._sessions_script, [self._sessions_key],
                                     [self._list_prefix, self._ttl_ms]))

    async def _history(self, session_id: str, limit: int) -> list[dict]:
        entries = await self._call("history", self._history_script, [self.session_key(session_id)],
                                   [limit, ",".join(TURN_ROLES)], session_id)
        return [{"role": TURN_ROLES[event["event_type"]], "content": str(event["content"])}
                for event in map(_event_of, entries)]

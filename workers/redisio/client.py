"""Redis clients and script calls, sync and asyncio, standalone or Cluster.

Scripts go by EVALSHA; a ``NOSCRIPT`` answer (a restarted or new node has an empty
script cache) falls back to EVAL, which also caches the script there. In a pipeline
the calls that met ``NOSCRIPT`` did not run, so re-running exactly those is safe.

Retries: worker-side calls may be retried after a lost connection (every worker script
is idempotent or fenced; the one exception, the attempt a read counts, may then count
twice, which only brings a poison thread's quarantine one drain closer). Producer-side
ingestion is *not* retried here:
a lost reply would make the retry append the delta twice; callers retry with the same
``delta_id`` instead, which the ingest script de-duplicates.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import hiredis
import redis
import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import ExponentialBackoff
from redis.cluster import RedisCluster
from redis.exceptions import AskError, MovedError, NoScriptError, OutOfMemoryError, ResponseError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.retry import Retry

from threadfold.core.errors import RedisFull
from threadfold.workers.redisio import sentinel

SyncRedis: TypeAlias = "redis.Redis | RedisCluster"
AsyncRedis: TypeAlias = "aioredis.Redis | AsyncRedisCluster"
Args = Sequence[str | bytes | int | float]


@dataclass(frozen=True, slots=True)
class Script:
    """A Lua script and its SHA1 (computed once: it is sent with every call)."""

    name: str
    source: str
    sha: str = field(init=False)

    def __post_init__(self) -> None:
        # SHA1 because Redis names scripts by it, not for security.
        digest = hashlib.sha1(self.source.encode(), usedforsecurity=False).hexdigest()
        object.__setattr__(self, "sha", digest)


@dataclass(frozen=True, slots=True)
class Call:
    """One script call: what a pipeline is made of."""

    script: Script
    keys: Sequence[str]
    args: Args


@dataclass(frozen=True, slots=True)
class Command:
    """One plain command, a read (XREAD), for a pipeline beside script calls; ``key`` is
    a key it reads (it names the node on a cluster: all its keys share a slot)."""

    args: tuple[str | bytes | int, ...]
    key: str


Item: TypeAlias = "Call | Command"


def text(value: Any) -> str:
    """A Redis reply as text (clients may or may not decode responses)."""
    return value.decode() if isinstance(value, bytes) else str(value)


def as_bytes(value: Any) -> bytes:
    """A Redis reply as bytes."""
    return value if isinstance(value, bytes) else str(value).encode()


def typed(exc: Exception) -> Exception:
    """A reply's error as the exception to raise: Redis out of memory is the tree's
    :class:`~threadfold.core.errors.RedisFull` (its cause Redis's own words).

    Redis refuses a write over ``maxmemory`` (with ``noeviction``, the only policy
    threadfold runs on: :mod:`threadfold.workers.redisio.maxmemory`). A script call is
    refused at its first write, or not at all: Redis lets a script that has written go
    on past the limit, so a call is never half-applied. A batch of pipelined calls may
    have applied the calls before the refused one. Retry once memory is freed or
    ``maxmemory`` raised; producers retry with the same ``delta_id``, which makes a
    retry of an applied delta harmless."""
    if isinstance(exc, OutOfMemoryError):
        full = RedisFull()
        full.__cause__ = exc
        return full
    return exc


def _retry(retries: int, retry_class: Any = Retry) -> dict[str, Any]:
    # The asyncio client needs redis.asyncio.retry.Retry: given the sync class it
    # silently never retries (the coroutine escapes the try).
    if retries <= 0:
        return {"retry": retry_class(ExponentialBackoff(), 0)}
    return {
        "retry": retry_class(ExponentialBackoff(cap=1.0, base=0.02), retries),
        "retry_on_error": [RedisConnectionError, RedisTimeoutError],
    }


def sync_client(
    url: str, *, cluster: bool, retries: int = 20, name: str | None = None
) -> SyncRedis:
    """A client for thread state; ``retries`` reconnects survive a Redis restart (and a
    failover, with a Sentinel URL: :mod:`threadfold.workers.redisio.sentinel`); ``name``
    is what ``CLIENT LIST`` shows of its connections (who holds them)."""
    options: dict[str, Any] = {
        "socket_keepalive": True,
        "health_check_interval": 30,
        **_retry(retries),
    }
    if name:
        options["client_name"] = name
    if (watched := sentinel.parse(url)) is not None:
        return watched.sync_master(options)
    if cluster:
        return RedisCluster.from_url(url, **options)
    return redis.Redis.from_url(url, **options)


def async_client(
    url: str, *, cluster: bool, retries: int = 20, name: str | None = None
) -> AsyncRedis:
    """The asyncio twin of :func:`sync_client`."""
    options: dict[str, Any] = {
        "socket_keepalive": True,
        "health_check_interval": 30,
        **_retry(retries, AsyncRetry),
    }
    if name:
        options["client_name"] = name
    if (watched := sentinel.parse(url)) is not None:
        return watched.async_master(options)
    if cluster:
        return AsyncRedisCluster.from_url(url, **options)
    return aioredis.Redis.from_url(url, **options)


def run(client: SyncRedis, call: Call) -> Any:
    """Run one script call."""
    n = len(call.keys)
    try:
        try:
            return client.evalsha(call.script.sha, n, *call.keys, *call.args)
        except NoScriptError:
            return client.eval(call.script.source, n, *call.keys, *call.args)
    except OutOfMemoryError as exc:
        raise typed(exc) from exc


def is_cluster(client: SyncRedis | AsyncRedis) -> bool:
    """Whether ``client`` talks to a Redis Cluster (each call a request of its own)."""
    return isinstance(client, RedisCluster | AsyncRedisCluster)


def run_many(client: SyncRedis, calls: Sequence[Item]) -> list[Any]:
    """Run many script calls (and plain commands) in one pipelined round trip (one per
    node on a cluster). Plain commands' replies are as Redis sent them (nested lists of
    bytes), except after a cluster redirection, when redis-py's own parsing applies."""
    if not calls:
        return []
    if isinstance(client, RedisCluster):
        return _run_many_cluster(client, calls)
    return _pipelined(client, client, calls, range(len(calls)))


#: Most calls of one batch a primary is sent at once on a cluster: a bulk goes in
#: exchanges of this many, each answered before the next is sent, so another client's
#: call waits behind at most this many of the bulk's in that primary, not the whole
#: bulk. Measured (docs/scaling.md): a quiet tenant's p99 beside a flooding one went
#: from 2.4x its baseline to 1.5x; the spread bulk stream through the workers costs
#: 1.13x the CPU a delta for it (A/B). Bounding only the producers' batches was tried:
#: the workers then kept up, folded a delta a commit, and all of it cost 1.27x.
FAIR_CALLS = 16

#: A batch of at most this many calls spanning nodes is sent to every node before any
#: reply is read; a larger one (a bulk) goes node by node, so it never holds every
#: primary at once (measured beside a flood: docs/scaling.md).
PARALLEL_CALLS = 32

#: Most calls merged into one script call (a few hundred microseconds of server time).
MAX_MERGED = 200


def run_merged(client: SyncRedis, calls: Sequence[Call]) -> list[Any]:
    """Run calls of scripts that take any number of threads (keys and arguments per
    thread, one answer per thread): the calls of one script become one call, per slot
    on a cluster (a script's keys must share one), so the fixed cost of a script call
    is paid once per round instead of once per thread. One answer per given call."""
    cluster = isinstance(client, RedisCluster)
    groups: dict[tuple[str, str], list[int]] = {}
    for i, call in enumerate(calls):
        groups.setdefault((call.script.name, _tag(call.keys[0]) if cluster else ""), []).append(i)
    merged: list[Call] = []
    owners: list[list[int]] = []
    for idx in groups.values():
        for start in range(0, len(idx), MAX_MERGED):
            part = idx[start : start + MAX_MERGED]
            keys = [key for i in part for key in calls[i].keys]
            args = [arg for i in part for arg in calls[i].args]
            merged.append(Call(calls[part[0]].script, keys, args))
            owners.append(part)
    answers: list[Any] = [None] * len(calls)
    for part, raw in zip(owners, run_many(client, merged), strict=True):
        for i, section in zip(part, raw, strict=True):
            answers[i] = section
    return answers


def pack_calls(calls: Sequence[Item], idx: Sequence[int], by_source: bool = False) -> bytes:
    """The commands of ``calls[idx]`` serialized as one write: EVALSHA for a script
    call, or EVAL with its source (``by_source``: see
    :class:`threadfold.workers.redisio.inflight.Stream`)."""
    pack: Any = hiredis.pack_command
    parts = []
    for i in idx:
        call = calls[i]
        if isinstance(call, Command):
            parts.append(pack(call.args))
        else:
            script = call.script
            head = (b"EVAL", script.source) if by_source else (b"EVALSHA", script.sha)
            parts.append(pack((*head, len(call.keys), *call.keys, *call.args)))
    return b"".join(parts)


def _rerun(client: SyncRedis, item: Item) -> Any:
    if isinstance(item, Command):
        return client.execute_command(*item.args)  # type: ignore[no-untyped-call]
    return run(client, item)


def _send_and_read(conn: Any, packed: bytes, count: int) -> list[Any]:
    conn.send_packed_command([packed])
    return read_replies(conn, count)


def read_replies(conn: Any, count: int) -> list[Any]:
    replies: list[Any] = []
    for _ in range(count):
        try:
            replies.append(conn.read_response())
        except ResponseError as exc:  # that call's answer (a script error, NOSCRIPT, MOVED)
            replies.append(exc)
    return replies


def _exchange(client: redis.Redis, packed: bytes, count: int) -> list[Any]:
    """Send pre-packed commands and read ``count`` replies on one pooled connection.

    redis-py's pipeline re-packs every argument and runs per-command hooks, which costs
    about as much client CPU as the exchange itself; scripts need none of that. The
    client's retry policy applies as in a pipeline: a lost connection re-sends the batch
    (worker clients) or raises (producer clients, built without retries). Any other
    failure mid-read leaves replies unread on the socket, so the connection is dropped.
    """
    pool = client.connection_pool
    conn: Any = pool.get_connection()
    try:
        replies: list[Any] = conn.retry.call_with_retry(
            lambda: _send_and_read(conn, packed, count), lambda _error: conn.disconnect()
        )
        return replies
    except BaseException:
        conn.disconnect()
        raise
    finally:
        pool.release(conn)


def _pipelined(
    conn: redis.Redis, client: SyncRedis, calls: Sequence[Item], idx: Sequence[int]
) -> list[Any]:
    return resolved(client, calls, idx, _exchange(conn, pack_calls(calls, idx), len(idx)))


def resolved(
    client: SyncRedis, calls: Sequence[Item], idx: Sequence[int], results: list[Any]
) -> list[Any]:
    """The replies of ``calls[idx]``, with calls that met NOSCRIPT or a redirection re-run."""
    redirected: set[str] = set()  # the slots (hash tags) a read was redirected for
    for n, result in enumerate(results):
        call = calls[idx[n]]
        if isinstance(result, NoScriptError):
            results[n] = _rerun(client, call)
        elif isinstance(result, MovedError | AskError):
            # Resharding: the cluster client follows the redirection (the command did
            # not run where it was sent).
            results[n] = _rerun(client, call)
            redirected.add(_tag(_key(call)))
        elif isinstance(call, Command) and _tag(call.key) in redirected:
            # A later read of a slot whose earlier call was redirected ran before that
            # one's re-run: run it again after it, so a thread's reads keep their order
            # (its fence is read before its log). Plain commands are reads: safe twice.
            results[n] = _rerun(client, call)
        elif isinstance(result, Exception):
            raise typed(result)
    return results


def _key(item: Item) -> str:
    """A key the call touches: it names the slot (all of a call's keys share one)."""
    return item.key if isinstance(item, Command) else item.keys[0]


def _tag(key: str) -> str:
    """The hash tag of a key, braces included (the project's keys all carry one)."""
    return key[: key.find("}") + 1]


def _run_many_cluster(client: RedisCluster, calls: Sequence[Item]) -> list[Any]:
    """redis-py refuses EVALSHA in cluster pipelines: pipeline per node ourselves.

    Each call's keys share one hash tag, so its first key names its node. A small batch
    spanning nodes (a request's few deltas) is sent to every node before any reply is
    read, so it waits for its slowest node, not for the sum of them; a large one (a
    bulk) goes node by node, so it never holds every primary at once, in exchanges of
    ``FAIR_CALLS``. Measured beside a flooding tenant: docs/scaling.md.
    """
    by_node: dict[str, list[int]] = {}
    clients: dict[str, redis.Redis] = {}
    for i, call in enumerate(calls):
        node = client.get_node_from_key(_key(call))  # type: ignore[no-untyped-call]
        by_node.setdefault(node.name, []).append(i)
        clients[node.name] = client.get_redis_connection(node)
    if len(by_node) > 1 and len(calls) <= PARALLEL_CALLS:
        # A lost connection is raised, as node by node: redis-py builds a cluster's node
        # clients without retries (the cluster client retries a command, not a batch).
        return _in_parallel(client, clients, calls, by_node)
    results: list[Any] = [None] * len(calls)
    for name, idx in by_node.items():
        for at in range(0, len(idx), FAIR_CALLS):
            part = idx[at : at + FAIR_CALLS]
            for i, result in zip(part, _pipelined(clients[name], client, calls, part),
                                 strict=True):
                results[i] = result
    return results


def _in_parallel(
    client: RedisCluster,
    clients: dict[str, redis.Redis],
    calls: Sequence[Item],
    by_node: dict[str, list[int]],
) -> list[Any]:
    """Every node's batch sent, then every node's replies read (one held connection a
    node, each dropped if the exchange fails half way)."""
    held: list[tuple[Any, Any, list[int]]] = []  # (pool, connection, the calls it carries)
    conn: Any
    try:
        for name, idx in by_node.items():
            pool = clients[name].connection_pool
            conn = pool.get_connection()
            held.append((pool, conn, idx))
            conn.send_packed_command([pack_calls(calls, idx)])
        replies = [read_replies(conn, len(idx)) for _, conn, idx in held]
    except BaseException:
        for _, conn, _ in held:
            conn.disconnect()  # replies may be left unread on it
        raise
    finally:
        for pool, conn, _ in held:
            pool.release(conn)
    results: list[Any] = [None] * len(calls)
    for (_, _, idx), got in zip(held, replies, strict=True):
        for i, result in zip(idx, resolved(client, calls, idx, got), strict=True):
            results[i] = result
    return results


async def arun(client: AsyncRedis, call: Call) -> Any:
    """Run one script call (asyncio): on one server as :func:`arun_many`'s exchange
    (redis-py's command layer costs the API more than the round trip itself)."""
    if isinstance(client, aioredis.Redis):
        [reply] = await arun_many(client, [call])
        return reply
    return await _acommand(client, call)


async def _acommand(client: AsyncRedis, call: Call) -> Any:
    """One script call through redis-py's command layer: EVALSHA, then EVAL when the
    server does not hold the script."""
    n = len(call.keys)
    try:
        try:
            return await client.evalsha(call.script.sha, n, *call.keys, *call.args)
        except NoScriptError:
            return await client.eval(call.script.source, n, *call.keys, *call.args)
    except OutOfMemoryError as exc:
        raise typed(exc) from exc


async def arun_many(client: AsyncRedis, calls: Sequence[Call]) -> list[Any]:
    """Run many script calls in one pipelined round trip (asyncio).

    On a cluster the calls run concurrently instead (redis-py refuses EVALSHA in cluster
    pipelines); each still goes straight to its slot's node.
    """
    if not calls:
        return []
    if isinstance(client, AsyncRedisCluster):
        # Concurrent first calls of a client not yet initialized each start its slot
        # discovery, and without retries (the services' clients) they fail with a
        # connection error; once initialized this returns at once.
        await client.initialize()
        return list(await asyncio.gather(*(_acommand(client, call) for call in calls)))
    results = await _aexchange(client, pack_calls(calls, range(len(calls))), len(calls))
    for i, result in enumerate(results):
        if isinstance(result, NoScriptError):
            results[i] = await _acommand(client, calls[i])
        elif isinstance(result, Exception):
            raise typed(result)
    return results


async def arun_items(client: aioredis.Redis, items: Sequence[Item]) -> list[Any]:
    """Script calls and plain commands in one round trip on one server, in order (a
    MULTI ... EXEC among them runs as a transaction); a script's NOSCRIPT is its reply."""
    return await _aexchange(client, pack_calls(items, range(len(items))), len(items))


async def _asend_and_read(conn: Any, packed: bytes, count: int) -> list[Any]:
    """Send, then read ``count`` replies, within one deadline (the connection's socket
    timeout). redis-py's ``send_packed_command`` wraps each send in ``asyncio.wait_for``,
    a task of its own on Python 3.11: that and its per-reply timers cost the API more
    than the exchange's own I/O. A write that fails is redis-py's ConnectionError, as
    there; the caller drops the connection."""
    if not conn.is_connected:
        await conn.connect_check_health(check_health=False)
    await conn.check_health()  # a PING only when the connection sat idle long enough
    try:
        async with asyncio.timeout(conn.socket_timeout):
            try:
                await conn._send_packed_command((packed,))
            except OSError as exc:  # an OS-level timeout too: the connection is dead
                raise RedisConnectionError(f"Error while writing to socket: {exc}") from exc
            return await _replies(conn, count)
    except TimeoutError as exc:
        raise RedisTimeoutError(f"no reply within {conn.socket_timeout} s") from exc


async def aread_replies(conn: Any, count: int) -> list[Any]:
    """The asyncio twin of :func:`read_replies`."""
    # One deadline for the whole batch: redis-py arms a timer for every reply, which
    # costs more than taking a short reply from the buffer (a bulk ingest reads 500).
    try:
        async with asyncio.timeout(conn.socket_timeout):
            return await _replies(conn, count)
    except TimeoutError as exc:
        raise RedisTimeoutError(f"no reply within {conn.socket_timeout} s") from exc


async def _replies(conn: Any, count: int) -> list[Any]:
    replies: list[Any] = []
    for _ in range(count):
        try:
            replies.append(await conn.read_response(timeout=math.inf))
        except ResponseError as exc:
            replies.append(exc)
    return replies


async def _aexchange(client: aioredis.Redis, packed: bytes, count: int) -> list[Any]:
    """The asyncio twin of :func:`_exchange` (a cancelled caller drops the connection)."""
    pool: Any = client.connection_pool
    conn: Any = await pool.get_connection()

    async def drop(_error: Exception) -> None:
        await conn.disconnect()

    try:
        replies: list[Any] = await conn.retry.call_with_retry(
            lambda: _asend_and_read(conn, packed, count), drop
        )
        return replies
    except BaseException:
        await conn.disconnect()
        raise
    finally:
        await pool.release(conn)

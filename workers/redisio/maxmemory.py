"""The state Redis's memory limit: its eviction policy, and whether it is full.

Only ``maxmemory-policy noeviction`` keeps thread state. Any other policy makes room by
deleting keys after their writes were acknowledged: a thread's log, its cursor, its
pages, the delta_id records. Deltas vanish, backlogs go negative, and nothing reports
an error. Measured under ``allkeys-lru``: every write got its 202, 40 of 40 threads
came out wrong. The ``volatile-*`` policies evict only keys with a TTL, and threadfold
gives one to the delta_id records and the wake-up flags: a retried delta would then be
appended twice. So every process refuses to start on any other policy, and ``/readyz``
fails when one is set later.

With ``noeviction`` a full Redis refuses writes instead (``OOM command not allowed``),
which is safe: the write fails and is not acknowledged
(:class:`threadfold.core.errors.RedisFull`).

The policy comes from CONFIG GET. Managed services often rename or deny CONFIG, so
INFO's memory section, which carries ``maxmemory_policy`` too, is the fallback. When
neither answers, the policy is unknown: that gives a warning and no refusal, since
nothing shows it is wrong. On a cluster every primary is asked, since each one evicts
on its own.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import redis
from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster
from redis.cluster import RedisCluster
from redis.exceptions import ResponseError

from threadfold.core.errors import ThreadfoldError
from threadfold.workers.redisio import sentinel
from threadfold.workers.redisio.client import AsyncRedis, SyncRedis

log = logging.getLogger("threadfold.maxmemory")

SAFE_POLICY = "noeviction"
FIX = "set maxmemory-policy noeviction (in redis.conf, or CONFIG SET maxmemory-policy noeviction)"
T = TypeVar("T")
#: What an unreachable Redis raises (a cluster client fails to build without one node).
UNREACHABLE = (redis.ConnectionError, redis.TimeoutError, redis.exceptions.RedisClusterException)


@dataclass(frozen=True, slots=True)
class NodeMemory:
    """What one Redis server says about its memory limit."""

    #: ``host:port`` on a cluster; '' for a standalone server.
    node: str
    #: ``maxmemory-policy``, or None when neither CONFIG GET nor INFO answered.
    policy: str | None
    #: Bytes counted against ``maxmemory``: INFO's ``used_memory`` less
    #: ``mem_not_counted_for_evict``, as Redis itself counts them. None when unknown.
    used: int | None
    #: ``maxmemory`` in bytes; 0 means no limit.
    limit: int

    @property
    def evicting(self) -> bool:
        return self.policy is not None and self.policy != SAFE_POLICY

    @property
    def full(self) -> bool:
        """Over the limit: Redis refuses every write that may grow memory."""
        return self.fuller_than(0)

    def fuller_than(self, headroom: int) -> bool:
        """Less than ``headroom`` bytes left under the limit (or over it)."""
        return self.limit > 0 and self.used is not None and self.used + headroom > self.limit

    @property
    def where(self) -> str:
        return f" on {self.node}" if self.node else ""


class EvictingPolicy(ThreadfoldError):
    """Raised at startup when the state Redis would evict keys to make room."""

    def __init__(self, nodes: Sequence[NodeMemory]) -> None:
        super().__init__(evicting_message(nodes))
        self.policies = sorted({n.policy for n in nodes if n.policy is not None})


def evicting_message(nodes: Sequence[NodeMemory]) -> str:
    named = ", ".join(f"{n.policy}{n.where}" for n in nodes)
    return (
        f"the state Redis has maxmemory-policy {named}: when full it deletes keys "
        f"(thread logs, cursors, pages, delta_id records) and acknowledged deltas are lost "
        f"without an error; {FIX}"
    )


def full_message(node: NodeMemory, headroom: int = 0) -> str:
    left = f", less than {headroom} left" if headroom and not node.full else ""
    return (
        f"the state Redis{node.where} is full: {node.used} bytes used of maxmemory "
        f"{node.limit}{left}; it refuses writes until memory is freed or maxmemory is raised"
    )


def problems(nodes: Sequence[NodeMemory], headroom: int = 0) -> list[tuple[str, str]]:
    """``(code, message)`` of what makes the state Redis unfit to serve: an evicting
    policy (``redis_evicting``), a server with less than ``headroom`` bytes left under
    its limit (``redis_full``).

    Why a headroom: Redis refuses a write when it is over its limit *with the command
    read*, so near the limit a large request is refused while small ones pass, and
    memory dips back under the limit once a refused request's buffer is freed. The API
    takes the largest request it accepts as its headroom: it is ready only while any
    request it accepts could be written."""
    found: list[tuple[str, str]] = []
    evicting = [n for n in nodes if n.evicting]
    if evicting:
        found.append(("redis_evicting", evicting_message(evicting)))
    found += [("redis_full", full_message(n, headroom)) for n in nodes if n.fuller_than(headroom)]
    return found


def describe(node: NodeMemory) -> str:
    """One line for ``threadfold status``: the policy, the use, what is wrong."""
    policy = node.policy or "unknown (CONFIG GET and INFO refused)"
    used = "?" if node.used is None else _mb(node.used)
    limit = f"of maxmemory {_mb(node.limit)}" if node.limit else "(no maxmemory)"
    line = f"maxmemory-policy {policy}, {used} used {limit}{node.where}"
    if node.evicting:
        line += f"; EVICTING: acknowledged deltas can be lost; {FIX}"
    if node.full:
        line += "; FULL: writes are refused until memory is freed or maxmemory is raised"
    return line


def _mb(size: int) -> str:
    return f"{size / 1_048_576:.1f} MB"


def refuse_evicting(nodes: Sequence[NodeMemory], who: str) -> None:
    """Raise :class:`EvictingPolicy` when any node evicts; warn when a policy is unknown."""
    evicting = [n for n in nodes if n.evicting]
    if evicting:
        raise EvictingPolicy(evicting)
    unknown = [n for n in nodes if n.policy is None]
    if unknown:
        log.warning(
            "%s: could not read the state Redis's maxmemory-policy%s (CONFIG GET and INFO "
            "were refused); it must be noeviction, or acknowledged deltas can be evicted",
            who,
            unknown[0].where,
        )


def parse(
    node: str, config: Mapping[Any, Any] | None, info: Mapping[str, Any] | None
) -> NodeMemory:
    """One server's answers (either may be None: refused) as a :class:`NodeMemory`."""
    conf = {_text(k): _text(v) for k, v in (config or {}).items()}
    info = info or {}
    policy = conf.get("maxmemory-policy") or info.get("maxmemory_policy")
    used = info.get("used_memory")
    if used is not None:
        used = int(used) - int(info.get("mem_not_counted_for_evict", 0))
    limit = conf.get("maxmemory", info.get("maxmemory", 0))
    return NodeMemory(node, None if policy is None else str(policy), used, int(limit or 0))


def read(client: SyncRedis) -> list[NodeMemory]:
    """Every primary's memory limit (one on a standalone server). Connection errors
    propagate: the caller decides what an unreachable Redis means."""
    if isinstance(client, RedisCluster):
        primaries = client.get_primaries()  # type: ignore[no-untyped-call]
        return [_read_one(client, node.name, {"target_nodes": node}) for node in primaries]
    return [_read_one(client, "", {})]


def _read_one(client: SyncRedis, name: str, target: dict[str, Any]) -> NodeMemory:
    config = _refused(lambda: client.config_get("maxmemory*", **target))
    return parse(name, config, _refused(lambda: client.info("memory", **target)))


async def aread(client: AsyncRedis) -> list[NodeMemory]:
    """The asyncio twin of :func:`read`."""
    if isinstance(client, AsyncRedisCluster):
        await client.initialize()  # a no-op once it knows the nodes
        found = []
        for node in client.get_primaries():
            config = await _arefused(client.config_get("maxmemory*", target_nodes=node))
            info = await _arefused(client.info("memory", target_nodes=node))
            found.append(parse(node.name, config, info))
        return found
    config = await _arefused(client.config_get("maxmemory*"))
    return [parse("", config, await _arefused(client.info("memory")))]


def check_url(url: str, *, cluster: bool, who: str, timeout: float = 5.0) -> None:
    """The startup check of a process that has no client of its own yet (worker, beat):
    raises :class:`EvictingPolicy`; an unreachable Redis only warns (the process may
    start before Redis, and ``/readyz`` checks again)."""
    options: dict[str, Any] = {"socket_timeout": timeout, "socket_connect_timeout": timeout}
    try:
        watched = sentinel.parse(url)
        client: SyncRedis = (
            watched.sync_master(options)
            if watched is not None
            else RedisCluster.from_url(url, **options)
            if cluster
            else redis.Redis.from_url(url, **options)
        )
        try:
            nodes = read(client)
        finally:
            client.close()
    except UNREACHABLE:
        log.warning("%s: the state Redis is unreachable; its maxmemory-policy is not checked", who)
        return
    refuse_evicting(nodes, who)


def _refused(ask: Callable[[], T]) -> T | None:
    try:
        return ask()
    except ResponseError:  # renamed, denied by an ACL (NOPERM), unknown to a proxy
        return None


async def _arefused(ask: Awaitable[T]) -> T | None:
    try:
        return await ask
    except ResponseError:
        return None


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)

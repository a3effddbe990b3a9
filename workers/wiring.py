"""The composition root: every part of the engine built from settings, the thread
service with what it holds, and the checks a process makes when it starts.

Every process builds what it uses here, one function per thing, sync and asyncio: the
API (threadfold.api.app, threadfold.api.server), the CLI (threadfold.workers.ops.commands),
the direct clients (threadfold.Client, threadfold.AsyncClient), the Celery worker and its
tasks (threadfold.workers.runtime.worker, .tasks) and the tools. So a Redis client is
made one way (the URL's secret read in one place, cluster or not), and a change of how a
store, a producer or a service is built is made once. (The feed's listener connection,
which the thread service makes for itself, is built in threadfold.workers.feed.connect.)

Retries: a client that writes deltas (the API, a direct client) is built with
``retries=0``, since a retried append after a lost reply would append twice (it answers
"unavailable", and its caller retries with the same delta_id); a worker's or a
command's client reconnects (``redis_io``'s default) to survive a Redis restart.

A thread service (:class:`Engine`, :class:`AsyncEngine`) holds a Redis client with no
automatic reconnect-and-retry, a store and a producer on it, and a waker that gathers a
window's wake-ups into one publish (from a thread, never from an event loop).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from celery import Celery
from pydantic import SecretStr

from threadfold.workers import metrics
from threadfold.workers.ingest.producer import AsyncProducer, Producer
from threadfold.workers.ingest.wakeup import (
    AsyncWaker,
    BackgroundWaker,
    CoalescingWaker,
    Waker,
)
from threadfold.workers.metrics import Metrics
from threadfold.workers.redisio import maxmemory
from threadfold.workers.redisio.client import AsyncRedis, SyncRedis, async_client, sync_client
from threadfold.workers.runtime.app import CeleryWaker, make_celery
from threadfold.workers.runtime.shared_broker import warn_if_shared
from threadfold.workers.settings import Settings
from threadfold.workers.storage.astore import AsyncStore
from threadfold.workers.storage.store import Store
from threadfold.workers.threads.query import NO_LIMITS, Limits
from threadfold.workers.threads.service import AsyncThreads, Threads

__all__ = [
    "CONNECTION_NAME",
    "AsyncEngine",
    "AsyncStore",
    "AsyncWaker",
    "Engine",
    "Store",
    "Waker",
    "aproducer",
    "aredis",
    "astore",
    "at_celery_start",
    "celery",
    "open_athreads",
    "open_threads",
    "producer",
    "redis",
    "settings_for",
    "store",
    "waker",
    "warn_shared_broker",
]

#: The start's messages keep the logger of the process that says them.
WORKER_LOG = logging.getLogger("threadfold.worker")

#: ``redis_io``'s default: enough reconnects to ride out a Redis restart.
RECONNECT = 20

#: What ``CLIENT LIST`` shows of a direct client's Redis connections.
CONNECTION_NAME: Final = "threadfold-client"

def redis(settings: Settings, *, retries: int = RECONNECT, name: str | None = None) -> SyncRedis:
    """A client for the state Redis of ``settings`` (``name``: what ``CLIENT LIST`` shows)."""
    url = settings.redis_url.get_secret_value()
    return sync_client(url, cluster=settings.cluster, retries=retries, name=name)


def aredis(settings: Settings, *, retries: int = RECONNECT, name: str | None = None) -> AsyncRedis:
    """The asyncio twin of :func:`redis`."""
    url = settings.redis_url.get_secret_value()
    return async_client(url, cluster=settings.cluster, retries=retries, name=name)


def store(settings: Settings, client: SyncRedis | None = None) -> Store:
    """The thread store on ``client`` (by default a new reconnecting one)."""
    given = client if client is not None else redis(settings)
    return Store(given, settings.keyspace, settings.replica_wait)


def astore(settings: Settings, client: AsyncRedis) -> AsyncStore:
    return AsyncStore(client, settings.keyspace, settings.replica_wait)


def celery(settings: Settings) -> Celery:
    """A Celery app for ``settings``'s broker (close it when done: it holds connections)."""
    return make_celery(settings)


def waker(settings: Settings, app: Celery) -> CeleryWaker:
    """Wake-ups as drain tasks on ``app``, ``refs_per_task`` threads a task."""
    return CeleryWaker(app, settings.queue, settings.refs_per_task)


def producer(settings: Settings, client: SyncRedis, wakes: Waker) -> Producer:
    return Producer(client, settings, wakes)


def aproducer(
    settings: Settings, client: AsyncRedis, wakes: AsyncWaker, metrics: Metrics | None = None
) -> AsyncProducer:
    return AsyncProducer(client, settings, wakes, metrics=metrics)


# -- a thread service and what it holds ---------------------------------------------------


def settings_for(
    settings: Settings | None, redis_url: str | None, broker_url: str | None
) -> Settings:
    """``settings`` as given, or read from ``THREADFOLD_*``, with the explicit URLs
    taking precedence over both (a direct client's arguments)."""
    explicit: dict[str, Any] = {}
    if redis_url is not None:
        explicit["redis_url"] = SecretStr(redis_url)
    if broker_url is not None:
        explicit["broker_url"] = SecretStr(broker_url)
    if settings is None:
        return Settings(**explicit)
    # model_copy does not validate: the values are given as the fields hold them.
    return settings.model_copy(update=explicit) if explicit else settings


def _celery_and_waker(settings: Settings, given: Waker | None) -> tuple[Celery | None, Waker]:
    """The waker ``given``, or Celery tasks on the settings' queue (with the app made
    for them, for ``close`` to release)."""
    if given is not None:
        return None, given
    app = celery(settings)
    return app, waker(settings, app)


@dataclass
class Engine:
    """A synchronous thread service and what it holds."""

    threads: Threads
    redis: SyncRedis
    waker: BackgroundWaker
    celery: Celery | None

    def close(self) -> None:
        """Publish the pending wake-ups, then close the connections."""
        try:
            self.waker.close()
        finally:
            self.redis.close()
            if self.celery is not None:
                self.celery.close()


def open_threads(
    settings: Settings,
    *,
    waker: Waker | None = None,
    wake_window: float = 0.005,
    name: str = CONNECTION_NAME,
) -> Engine:
    app, wakes = _celery_and_waker(settings, waker)
    background = BackgroundWaker(wakes, window=wake_window)
    client = redis(settings, retries=0, name=name)
    writes = producer(settings, client, background)
    threads = Threads(settings, writes, store(settings, client), name=name)
    return Engine(threads, client, background, app)


@dataclass
class AsyncEngine:
    """An asyncio thread service and what it holds."""

    threads: AsyncThreads
    redis: AsyncRedis
    waker: AsyncWaker
    celery: Celery | None

    def broker_ready(self) -> bool:
        """Whether the broker answers (within 2 s), through this service's Celery app."""
        if self.celery is None:
            return True  # wake-ups go through a waker the caller gave: not ours to check
        try:
            with self.celery.connection_for_write() as conn:
                conn.ensure_connection(max_retries=1, timeout=2)
        except Exception:  # noqa: BLE001  # any failure means "not ready"
            return False
        return True

    async def readiness(self, headroom: int) -> list[tuple[str, str]]:
        """Why the state Redis cannot take writes now (a code and a text each): no room
        for ``headroom`` bytes under maxmemory, or an evicting policy; empty when ready.
        Raises a redis error when it is unreachable."""
        await self.redis.ping()
        return maxmemory.problems(await maxmemory.aread(self.redis), headroom=headroom)

    async def refuse_an_evicting_redis(self, who: str, log: logging.Logger) -> None:
        """Refuse to start on a state Redis that evicts keys (EvictingPolicy), closing
        the connection."""
        try:
            await arefuse_an_evicting_redis(self.redis, who, log)
        except maxmemory.EvictingPolicy:
            await self.redis.aclose()
            raise

    async def fleet(
        self, own: Metrics, liveness_seconds: float
    ) -> tuple[dict[str, float], dict[str, float]]:
        """The fleet's totals and live gauges, this process's counts (``own``) flushed
        first (:func:`threadfold.workers.metrics.fleet`)."""
        keyspace = self.threads.settings.keyspace
        return await metrics.fleet(self.redis, keyspace, liveness_seconds, own)

    async def close(self) -> None:
        """End the subscriptions, publish the pending wake-ups, close the connections."""
        try:
            await self.threads.close()
            if isinstance(self.waker, CoalescingWaker):
                await self.waker.close()
        finally:
            await self.redis.aclose()
            if self.celery is not None:
                await asyncio.to_thread(self.celery.close)


def open_athreads(  # noqa: PLR0913  # the service's options, by name, as the front ends give them
    settings: Settings,
    *,
    waker: Waker | None = None,
    wakes: AsyncWaker | None = None,
    wake_window: float = 0.005,
    name: str | None = CONNECTION_NAME,
    limits: Limits = NO_LIMITS,
    hub_name: str = CONNECTION_NAME,
    queue_events: int | None = None,
    with_broker: bool = False,
    metrics: Metrics | None = None,
) -> AsyncEngine:
    """An asyncio service; ``wakes``, when given, is the waker itself (else the
    publishes of ``waker``, or of Celery, gathered over ``wake_window`` seconds).
    ``with_broker``: hold a Celery app for :meth:`AsyncEngine.broker_ready` even when
    the wake-ups go through ``wakes`` (the API's readiness). ``metrics``: where the
    commits its appends make themselves are counted (the API's counters)."""
    app: Celery | None = None
    if wakes is None:
        app, sync_wakes = _celery_and_waker(settings, waker)
        wakes = CoalescingWaker(sync_wakes, window=wake_window)
    elif with_broker:
        app = celery(settings)
    client = aredis(settings, retries=0, name=name)
    writes = aproducer(settings, client, wakes, metrics)
    threads = AsyncThreads(
        settings,
        writes,
        astore(settings, client),
        limits=limits,
        name=hub_name,
        queue_events=queue_events,
    )
    return AsyncEngine(threads, client, wakes, app)


# -- a process's start --------------------------------------------------------------------


def warn_shared_broker(settings: Settings, who: str, log: logging.Logger = WORKER_LOG) -> None:
    """Once per process start (the API's, a worker's, beat's): a broker on the state's
    Redis server is said (threadfold.workers.runtime.shared_broker)."""
    warn_if_shared(settings, f"threadfold {who}", log)


def refuse_an_evicting_redis(settings: Settings, who: str) -> None:
    """A worker's or beat's start: on a state Redis that evicts keys, they would lose
    acknowledged deltas silently (threadfold.workers.redisio.maxmemory), so they exit with the
    policy and the fix instead. SystemExit: Celery logs and swallows an Exception raised
    by a signal handler, only SystemExit stops the process. An unreachable Redis only
    warns (the process may start before it)."""
    try:
        url = settings.redis_url.get_secret_value()
        maxmemory.check_url(url, cluster=settings.cluster, who=f"threadfold {who}")
    except maxmemory.EvictingPolicy as exc:
        raise SystemExit(f"threadfold {who}: refusing to start: {exc}") from None


def at_celery_start(settings: Settings, who: str) -> Callable[..., None]:
    """The checks of a worker's or beat's start, as a ``worker_init``/``beat_init``
    handler (their main process, once; not ``celery inspect``, which imports the app)."""

    def check(**_: object) -> None:
        refuse_an_evicting_redis(settings, who)
        warn_shared_broker(settings, who)

    return check


async def arefuse_an_evicting_redis(client: AsyncRedis, who: str, log: logging.Logger) -> None:
    """The API's start: raises :class:`maxmemory.EvictingPolicy` on a state Redis that
    evicts keys (the exception fails the lifespan, and uvicorn exits with its message);
    an unreachable Redis only warns (/readyz checks again)."""
    try:
        nodes = await asyncio.wait_for(maxmemory.aread(client), timeout=5)
    except (*maxmemory.UNREACHABLE, TimeoutError):
        log.warning("the state Redis is unreachable; its maxmemory-policy is not checked")
        return
    try:
        maxmemory.refuse_evicting(nodes, who)
    except maxmemory.EvictingPolicy as exc:
        log.critical("%s: refusing to start: %s", who, exc)
        raise

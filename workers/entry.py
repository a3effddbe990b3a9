"""The way in: a store, a producer and a waker from settings, and the checks a process
makes when it starts.

The API (threadfold.api.app), the CLI (threadfold.workers.ops.commands), the direct clients
(threadfold.Client, threadfold.AsyncClient), the Celery tasks (threadfold.workers.runtime.tasks)
and the tools build what they use here, one function per thing, sync and asyncio, so
that a Redis client is made one way (the URL's secret read in one place, cluster or
not) and a change of how a store or producer is built is made once.

Retries: a client that writes deltas (the API, a direct client) is built with
``retries=0``, since a retried append after a lost reply would append twice (it answers
"unavailable", and its caller retries with the same delta_id); a worker's or a
command's client reconnects (``redis_io``'s default) to survive a Redis restart.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import redis as redis_py
import redis.asyncio as aioredis
from celery import Celery

from threadfold.workers.feed.hub import Hub
from threadfold.workers.ingest.producer import AsyncProducer, Producer
from threadfold.workers.ingest.wakeup import AsyncWaker, Waker
from threadfold.workers.metrics import Metrics
from threadfold.workers.redisio import maxmemory
from threadfold.workers.redisio.client import AsyncRedis, SyncRedis, async_client, sync_client
from threadfold.workers.runtime.app import CeleryWaker, make_celery
from threadfold.workers.runtime.shared_broker import warn_if_shared
from threadfold.workers.settings import Settings
from threadfold.workers.storage.astore import AsyncStore
from threadfold.workers.storage.store import Store

#: The start's messages keep the logger of the process that says them.
WORKER_LOG = logging.getLogger("threadfold.worker")

#: ``redis_io``'s default: enough reconnects to ride out a Redis restart.
RECONNECT = 20


def redis(settings: Settings, *, retries: int = RECONNECT, name: str | None = None) -> SyncRedis:
    """A client for the state Redis of ``settings`` (``name``: what ``CLIENT LIST`` shows)."""
    url = settings.redis_url.get_secret_value()
    return sync_client(url, cluster=settings.cluster, retries=retries, name=name)


def aredis(settings: Settings, *, retries: int = RECONNECT, name: str | None = None) -> AsyncRedis:
    """The asyncio twin of :func:`redis`."""
    url = settings.redis_url.get_secret_value()
    return async_client(url, cluster=settings.cluster, retries=retries, name=name)


def listener(settings: Settings, *, name: str) -> redis_py.Redis:
    """A connection for the Pub/Sub channels of thread feeds: one plain connection, on a
    Cluster too (a script's PUBLISH is broadcast to every node, so the URL's node hears
    every thread's). No reconnects of its own: a follower must see each disconnect, the
    one way Pub/Sub loses messages, and read what it missed from the feed."""
    url = settings.redis_url.get_secret_value()
    client = sync_client(url, cluster=False, retries=0, name=name)
    assert isinstance(client, redis_py.Redis)  # cluster=False
    return client


def alistener(settings: Settings, *, name: str) -> aioredis.Redis:
    """The asyncio twin of :func:`listener`."""
    url = settings.redis_url.get_secret_value()
    client = async_client(url, cluster=False, retries=0, name=name)
    assert isinstance(client, aioredis.Redis)  # cluster=False
    return client


def ahub(
    settings: Settings, store: AsyncStore, *, name: str, queue_events: int, max_subscribers: int
) -> Hub:
    """A follower of thread feeds for any number of subscriptions (an API process's, an
    AsyncClient's), on a listener connection of its own named ``name``; it hears each
    thread on the channel COMMIT publishes to, the thread's feed key."""
    return Hub(
        alistener(settings, name=name),
        store,
        lambda ref: settings.keyspace.thread(ref).feed,
        queue_events=queue_events,
        max_subscribers=max_subscribers,
    )


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

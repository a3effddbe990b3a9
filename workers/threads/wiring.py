"""A thread service built from settings, with what it holds: the one place the front
ends get theirs (the HTTP API's process and each direct client).

A service holds a Redis client with no automatic reconnect-and-retry (a retried append
after a lost reply would be appended twice: a failure answers Unavailable, and the
caller retries with its ``delta_id``), a store and a producer on it, and a waker that
gathers a window's wake-ups into one publish (from a thread, never from an event loop).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any, Final

from celery import Celery
from pydantic import SecretStr

from threadfold.workers import entry, metrics
from threadfold.workers.ingest.wakeup import (
    AsyncWaker,
    BackgroundWaker,
    CoalescingWaker,
    Waker,
)
from threadfold.workers.metrics import Metrics
from threadfold.workers.redisio import maxmemory
from threadfold.workers.redisio.client import AsyncRedis, SyncRedis
from threadfold.workers.settings import Settings
from threadfold.workers.threads.query import NO_LIMITS, Limits
from threadfold.workers.threads.service import AsyncThreads, Threads

__all__ = [
    "CONNECTION_NAME",
    "AsyncEngine",
    "AsyncWaker",
    "Engine",
    "Waker",
    "open_athreads",
    "open_threads",
    "settings_for",
]

#: What ``CLIENT LIST`` shows of a direct client's Redis connections.
CONNECTION_NAME: Final = "threadfold-client"


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


def _celery_and_waker(settings: Settings, waker: Waker | None) -> tuple[Celery | None, Waker]:
    """``waker`` as given, or Celery tasks on the settings' queue (with the app made for
    them, for ``close`` to release)."""
    if waker is not None:
        return None, waker
    app = entry.celery(settings)
    return app, entry.waker(settings, app)


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
    client = entry.redis(settings, retries=0, name=name)
    producer = entry.producer(settings, client, background)
    threads = Threads(settings, producer, entry.store(settings, client), name=name)
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
            await entry.arefuse_an_evicting_redis(self.redis, who, log)
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
        app = entry.celery(settings)
    client = entry.aredis(settings, retries=0, name=name)
    producer = entry.aproducer(settings, client, wakes, metrics)
    threads = AsyncThreads(
        settings,
        producer,
        entry.astore(settings, client),
        limits=limits,
        name=hub_name,
        queue_events=queue_events,
    )
    return AsyncEngine(threads, client, wakes, app)

"""The feed's connections from settings: the listener a process follows thread feeds on,
and the hub that shares one among many subscriptions.

The thread service makes these itself, per subscription (a direct client's) or once per
service (the API process's and an AsyncClient's hub), so they are built here, below it,
rather than in :mod:`threadfold.workers.wiring`, which builds the service.
"""

from __future__ import annotations

import redis as redis_py
import redis.asyncio as aioredis

from threadfold.workers.feed.hub import Hub
from threadfold.workers.redisio.client import async_client, sync_client
from threadfold.workers.settings import Settings
from threadfold.workers.storage import follow
from threadfold.workers.storage.astore import AsyncStore


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
        follow_window_ms=follow.window_ms(settings.feed_limits.max_age_ms),
    )

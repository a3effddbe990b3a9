"""A Celery broker on the state's own Redis server, said once when a process starts.

On one server the broker shares the state's memory: once the state fills ``maxmemory``
(``noeviction``), Redis refuses the broker's bookkeeping too. Workers survive that (they
reconnect), but the wake-ups in flight are lost until their flag's lease lapses and the
sweeper sends them again, and no drain can be handed on (docs/operations.md, "Redis
memory"). It works until then, so it is not refused, but said: one warning at the start
of the API, a worker and beat, with the URLs' passwords masked.

Same server means the same host and port (or unix socket), whatever the database: a
database number splits keys, not memory. Only what the URLs say is compared (no name is
resolved: a start must not wait on DNS), with the loopback names taken as one.
"""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

from threadfold.workers.redact import mask
from threadfold.workers.settings import Settings

#: Names of this machine's loopback interface: a Redis on one of them at a port is, in
#: practice, the Redis on the others at that port (its default binds both).
LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})
REDIS_PORT = 6379


def server(url: str) -> tuple[str, int] | None:
    """The Redis server a ``redis://``, ``rediss://`` or ``unix://`` URL names, as (host,
    port) or (socket path, 0); None for a URL that names no single server known from the
    URL itself (``amqp://``; ``sentinel://``, whose master the sentinels tell)."""
    try:
        parts = urlsplit(url)
        if parts.scheme in {"redis", "rediss"}:
            host = (parts.hostname or "localhost").lower()
            return ("localhost" if host in LOOPBACK else host, parts.port or REDIS_PORT)
    except ValueError:  # a port that is not a number: the client will say so
        return None
    if parts.scheme == "unix":
        return (parts.path, 0)
    return None


def shares_state(settings: Settings) -> bool:
    """Whether the broker is the state's Redis server (any database of it)."""
    state = server(settings.redis_url.get_secret_value())
    return state is not None and state == server(settings.broker)


def warn_if_shared(settings: Settings, who: str, log: logging.Logger) -> None:
    """One warning when the broker is on the state's Redis server, naming both."""
    if not shares_state(settings):
        return
    state = mask(settings.redis_url.get_secret_value())
    if settings.broker_url is None:
        where = f"THREADFOLD_BROKER_URL is unset: the Celery broker is the state Redis ({state})"
    else:
        broker = mask(settings.broker)
        where = f"the Celery broker ({broker}) is on the state's Redis server ({state})"
    log.warning(
        "%s: %s. They share its memory: when the state fills maxmemory, Redis refuses the "
        "broker's bookkeeping too, and wake-ups are lost until their flag's lease lapses "
        "(THREADFOLD_WAKE_TTL_SECONDS) and the sweeper sends them again. Give the broker a "
        "Redis of its own, or RabbitMQ (docs/operations.md, 'Redis memory')",
        who,
        where,
    )

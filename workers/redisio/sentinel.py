"""Redis behind Sentinel: one URL form for the state and the broker.

``redis+sentinel://[[user]:password@]host:port[,host:port...]/service[/db]`` names the
sentinels to ask, the service (the name they monitor: ``sentinel monitor <service>
...``) and the database; ``sentinel://`` is the same. The password is the primary's
(and its replicas'), not the sentinels'.

A client of such a URL asks the sentinels for the current primary on every new
connection (redis-py's ``SentinelConnectionPool``): after a failover the clients'
connections to the old primary fail, their retries reconnect, and the sentinels name
the promoted replica. The broker is Celery's (kombu's ``sentinel`` transport), which
takes the sentinels as a ``;``-list of ``sentinel://`` URLs and the service as its
``master_name`` transport option: :func:`kombu_broker` translates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import redis
import redis.asyncio as aioredis
from redis.asyncio.sentinel import Sentinel as AsyncSentinel
from redis.sentinel import Sentinel

SCHEMES = frozenset({"redis+sentinel", "sentinel"})
#: How long a question to one sentinel may take before the next one is asked.
SENTINEL_TIMEOUT = 0.5
SENTINEL_PORT = 26379
_ASKING: dict[str, Any] = {"socket_timeout": SENTINEL_TIMEOUT}


@dataclass(frozen=True, slots=True)
class SentinelUrl:
    """A parsed ``redis+sentinel://`` URL."""

    sentinels: tuple[tuple[str, int], ...]
    service: str
    db: int
    username: str | None
    password: str | None

    def master_kwargs(self) -> dict[str, Any]:
        return {"db": self.db, "username": self.username, "password": self.password}

    def sync_master(self, options: dict[str, Any]) -> redis.Redis:
        """A client of the current primary, found again after a failover. The timeout
        is the sentinels' questions' alone (``sentinel_kwargs``): given to Sentinel
        itself it would also bound every read from the primary, a WAIT's included."""
        watch = Sentinel(list(self.sentinels), sentinel_kwargs=_ASKING)
        client: redis.Redis = watch.master_for(self.service, **self.master_kwargs(), **options)
        return client

    def async_master(self, options: dict[str, Any]) -> aioredis.Redis:
        """The asyncio twin of :meth:`sync_master`."""
        watch = AsyncSentinel(list(self.sentinels), sentinel_kwargs=_ASKING)
        client: aioredis.Redis = watch.master_for(
            self.service, **self.master_kwargs(), **options
        )
        return client


def is_sentinel(url: str) -> bool:
    return url.split("://", 1)[0].lower() in SCHEMES


def parse(url: str) -> SentinelUrl | None:
    """The URL's parts, or None for a URL of another scheme; ValueError when malformed
    (the message never quotes the URL: it may hold a password)."""
    if not is_sentinel(url):
        return None
    try:
        parts = urlsplit(url)
        username, password = parts.username, parts.password
    except ValueError:  # its own words may quote the URL (a password): not passed on
        raise ValueError("a Sentinel URL that cannot be parsed (check its brackets)") from None
    hosts = parts.netloc.rpartition("@")[2]
    sentinels = tuple(_host_port(h) for h in hosts.split(",") if h)
    path = [p for p in parts.path.split("/") if p]
    if not sentinels or not path or len(path) > 2:
        raise ValueError(
            "a Sentinel URL is redis+sentinel://host:port[,host:port...]/service[/db], "
            "a password before the hosts"
        )
    if len(path) == 2 and not path[1].isdigit():
        raise ValueError("a Sentinel URL's database is a number: .../service/db")
    return SentinelUrl(
        sentinels,
        unquote(path[0]),
        int(path[1]) if len(path) == 2 else 0,
        unquote(username) if username else None,
        unquote(password) if password is not None else None,
    )


def _host_port(text: str) -> tuple[str, int]:
    """``host``, ``host:port``, ``[v6]`` or ``[v6]:port``."""
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = rest.removeprefix(":")
    else:
        host, _, port = text.rpartition(":") if ":" in text else (text, "", "")
    if port and not port.isdigit():
        raise ValueError("a sentinel's port is a number")
    return host or "localhost", int(port) if port else SENTINEL_PORT


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host  # an IPv6 address in a URL


def kombu_broker(url: str) -> tuple[str, dict[str, Any]]:
    """The broker URL and transport options kombu takes for ``url`` (unchanged, with no
    options, when it is not a Sentinel URL)."""
    found = parse(url)
    if found is None:
        return url, {}
    auth = ""
    if found.password is not None:
        auth = f"{quote(found.username or '', safe='')}:{quote(found.password, safe='')}@"
    alt = ";".join(f"sentinel://{auth}{_bracketed(host)}:{port}/{found.db}"
                   for host, port in found.sentinels)
    return alt, {"master_name": found.service, "sentinel_kwargs": {"socket_timeout": 0.5}}

"""Script calls in flight on one held connection: the producer's streaming bulks.

Beside :mod:`threadfold.workers.redisio.client`, whose packing and reply reading it uses: every
exchange there takes a pooled connection for one round trip, while this one holds its
connection across calls, with replies due on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from redis.cluster import RedisCluster

from threadfold.workers.redisio.client import (
    Item,
    SyncRedis,
    pack_calls,
    read_replies,
    resolved,
    run_many,
)
from threadfold.workers.redisio.durable import Wait, Waited


class Stream:
    """Script calls pipelined on one held connection, a batch of calls in flight while
    the caller prepares the next: a batch job validates and encodes bulk k+1 while Redis
    appends bulk k, in one thread (two threads sharing a producer cost a fifth more CPU
    per delta, in GIL hand-offs and smaller batches).

    One connection keeps the batches in order: Redis runs a connection's commands in
    the order they arrive, so a thread's deltas stay in order across bulks. Scripts go
    by EVAL with their source, never EVALSHA: a NOSCRIPT answer to batch k, re-run
    after batch k+1 already ran, would put k's deltas after k+1's (a test caught it).
    Redis finds a sent script by its SHA1, which costs it microseconds per batch. Nothing is
    re-sent after a lost connection (ingestion is not idempotent without a delta_id):
    the error is raised, and the batches whose replies were not read are in doubt, as
    with a failed ``run_many``. On a cluster each batch runs as ``run_many`` does, one
    after another (its calls span nodes). With a ``wait`` (durability 'replica'), each
    batch is followed by its ``WAIT`` on the connection and answered only once enough
    replicas hold it (:mod:`threadfold.workers.redisio.durable`).
    """

    def __init__(self, client: SyncRedis, wait: Wait | None = None) -> None:
        self.client = client
        self.wait = wait
        self._conn: Any = None
        self._sent: list[Sequence[Item]] = []

    def send(self, calls: Sequence[Item]) -> None:
        """Send a batch of calls; its replies are read by :meth:`receive`, in order."""
        if isinstance(self.client, RedisCluster) or not calls:
            self._sent.append(calls)
            return
        if self._conn is None:
            self._conn = self.client.connection_pool.get_connection()
        packed = pack_calls(calls, range(len(calls)), by_source=True)
        if self.wait is not None:
            packed += self.wait.packed
        try:
            # No health check (a PING) while replies are due: it would read one of them.
            self._conn.send_packed_command([packed], check_health=not self._sent)
        except BaseException:
            self.close(drop=True)
            raise
        self._sent.append(calls)

    @property
    def in_flight(self) -> int:
        """Batches sent whose replies are not read yet."""
        return len(self._sent)

    def receive(self) -> Waited:
        """The replies of the oldest batch sent and not yet received, and (with a wait)
        the refusal to raise once they are used (:meth:`Wait.checked`)."""
        calls = self._sent.pop(0)
        if isinstance(self.client, RedisCluster) or not calls:
            return run_many(self.client, calls), None
        try:
            replies = read_replies(self._conn, len(calls) + (self.wait is not None))
        except BaseException:
            self.close(drop=True)
            raise
        if self.wait is not None:  # by source: never NOSCRIPT, nothing to re-run
            return self.wait.checked(calls, replies)
        return resolved(self.client, calls, range(len(calls)), replies), None

    def close(self, drop: bool = False) -> None:
        """Give the connection back; one with replies unread (or ``drop``: a failed
        exchange) is disconnected first, never reused as it is."""
        conn, self._conn = self._conn, None
        if conn is None:
            return
        if self._sent or drop:
            self._sent.clear()
            conn.disconnect()
        self.client.connection_pool.release(conn)  # type: ignore[union-attr]

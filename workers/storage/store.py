"""The thread store over a synchronous Redis client: each method is one exchange."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from threadfold.core.keys import Keyspace
from threadfold.core.results import Status
from threadfold.workers.redisio.client import Call, SyncRedis, run, run_many, run_merged, text
from threadfold.workers.redisio.durable import Wait, write
from threadfold.workers.storage import (
    backlog,
    commit,
    context,
    copy_source,
    delete,
    expire,
    fail,
    feed,
    follow,
    lookup,
    patch,
    read_state,
    retry,
    status,
    touch,
    wake,
)
from threadfold.workers.storage.backlog import Listing
from threadfold.workers.storage.commit import CommitPlan, Committed
from threadfold.workers.storage.context import ContextRead, Direction
from threadfold.workers.storage.lookup import Found
from threadfold.workers.storage.meta import VERSION_FIELDS, version_of
from threadfold.workers.storage.read_state import StateBodies, StatePage, WholeThread
from threadfold.workers.storage.retry import Retried
from threadfold.workers.storage.status import Stored


class Store:
    """Thread state in Redis (standalone or Cluster) for producers, workers and tools."""

    def __init__(self, client: SyncRedis, keyspace: Keyspace, wait: Wait | None = None) -> None:
        self.client = client
        self.keyspace = keyspace
        #: What a delete or a patch waits for before it is answered (durability
        #: 'replica'); a worker's commits never wait (nobody is answered for them).
        self.wait = wait

    # -- draining --------------------------------------------------------------------------

    def positions_many(self, items: Sequence[tuple[str, Collection[str]]]) -> list[Found]:
        """The stored positions of the given ids and the pages holding them, for several
        threads in one round trip."""
        asked = [(ref, list(ids)) for ref, ids in items if ids]
        calls = [lookup.call(self.keyspace.thread(ref), ids) for ref, ids in asked]
        raws = run_many(self.client, calls) if calls else []
        found = {ref: lookup.parse(raw) for (ref, _), raw in zip(asked, raws, strict=True)}
        return [found.get(ref, lookup.nothing()) for ref, _ in items]

    def commit_many(self, plans: Sequence[CommitPlan]) -> list[Committed]:
        """Several threads' compare-and-set commits in one pipelined round trip (one
        script call per slot: calls of many threads merge), each standing on its own."""
        calls = [commit.call(self.keyspace, plan) for plan in plans]
        return [commit.parse(raw) for raw in run_merged(self.client, calls)]

    def fail(
        self, ref: str, limit: int, reason: str, entry: str, backoff_ms: int, *, fence: str
    ) -> bool:
        """Count a failed drain of the batch read at ``fence``; True when the thread is
        now quarantined (never when the fence has moved since: see ``fail.lua``)."""
        args = fail.Args(limit, reason, entry, ref, backoff_ms, fence)
        return fail.parse(run(self.client, fail.call(self.keyspace.thread(ref), args)))

    def retry(self, ref: str, wake_ms: int, *, skip: bool = False) -> Retried | None:
        """Lift a quarantine, optionally skipping the entry the drain failed on; None
        (and nothing written) when the thread does not exist."""
        call = retry.call(self.keyspace.thread(ref), wake_ms, skip)
        return retry.parse(run(self.client, call))

    def wake_if_stalled(self, refs: Sequence[str], wake_ms: int) -> list[str]:
        """The refs whose flag this call set: the caller must send their wake-ups."""
        calls = [wake.call(self.keyspace.thread(ref), wake_ms) for ref in refs]
        answers = run_many(self.client, calls)
        return [ref for ref, raw in zip(refs, answers, strict=True) if wake.parse(raw)]

    # -- reading ---------------------------------------------------------------------------

    def read_state(
        self, ref: str, mode: str = "all", anchor: str = "", limit: int = -1
    ) -> StatePage | None:
        k = self.keyspace.thread(ref)
        raw = read_state.exchange(self.client, k, mode, anchor, limit)
        return read_state.parse(raw, mode, limit)

    def read_state_bodies(
        self, ref: str, mode: str = "all", anchor: str = "", limit: int = -1
    ) -> StateBodies | None:
        """:meth:`read_state` without decoding the messages."""
        k = self.keyspace.thread(ref)
        raw = read_state.exchange(self.client, k, mode, anchor, limit)
        return read_state.parse_bodies(raw, mode, limit)

    def copy_source(self, ref: str) -> tuple[StatePage, dict[str, bytes]] | None:
        """The whole state and the metadata, in one read (a copy's source)."""
        return copy_source.parse(run(self.client, copy_source.call(self.keyspace.thread(ref))))

    def read_context(self, ref: str, direction: Direction, want: int) -> ContextRead | None:
        """The pages a context window needs: from the thread's end (or start) until
        their counts pass ``want`` tokens (:mod:`threadfold.workers.storage.context`)."""
        call = context.call(self.keyspace.thread(ref), direction, want)
        return context.parse(run(self.client, call))

    def version(self, ref: str) -> str | None:
        """The thread's version (cursor), or None when it was never written."""
        meta = self.keyspace.thread(ref).meta
        return version_of(self.client.hmget(meta, [*VERSION_FIELDS]))

    def status(self, ref: str, ttl_ms: int = 0) -> Status | None:
        """``ttl_ms``: the deployment's TTL (what a thread without its own has)."""
        found = self.stored(ref, ttl_ms)
        return None if found is None else found.status

    def stored(self, ref: str, ttl_ms: int = 0) -> Stored | None:
        """The status, with the count of entries applied and the metadata as stored."""
        return status.parse(run(self.client, status.call(self.keyspace.thread(ref), ttl_ms)), ref)

    def snapshot(self, ref: str) -> WholeThread | None:
        """The whole thread with its messages' positions (a follower's start)."""
        raw = read_state.exchange(self.client, self.keyspace.thread(ref))
        return read_state.parse_snapshot(raw)

    def feed_after(self, ref: str, after: str, count: int = feed.PAGE) -> feed.FeedRead:
        """The change events after version ``after``, or why there are none."""
        call = feed.call(self.keyspace.thread(ref), after, count)
        return feed.parse(run(self.client, call))

    def follow(self, refs: Sequence[str], window_ms: int) -> None:
        """Mark threads followed for ``window_ms``: their commits keep their change
        events in their feeds meanwhile (pipelined)."""
        calls = [follow.call(self.keyspace.thread(ref), window_ms) for ref in refs]
        run_many(self.client, calls)

    def delete(self, ref: str) -> bool:
        return delete.parse(write(self.client, delete.call(self.keyspace.thread(ref)), self.wait))

    # -- a LangGraph saver's checkpoints ----------------------------------------------------

    def checkpoint_read(self, call: Call) -> Any:
        """A LangGraph saver's read (a ``checkpoint_read`` call; its module parses it)."""
        return run(self.client, call)

    def checkpoint_write(self, call: Call) -> Any:
        """A LangGraph saver's write (put, writes, removal), durable as a delete is."""
        return write(self.client, call, self.wait)

    # -- lifecycle -------------------------------------------------------------------------

    def patch(
        self, ref: str, ttl: str, pinned: str, ttl_ms: int, changes: Sequence[str | bytes]
    ) -> bool | patch.Refused:
        """Change the thread's metadata, TTL and pin together (see ``patch.lua``)."""
        call = patch.call(self.keyspace.thread(ref), ttl, pinned, ttl_ms, changes)
        return patch.parse(write(self.client, call, self.wait))

    def touch(self, ref: str, ttl_ms: int) -> None:
        """A read restarts the thread's TTL (when reads are to)."""
        run(self.client, touch.call(self.keyspace.thread(ref), ttl_ms))

    def expire(self, buckets: Sequence[int], limit: int, ttl_ms: int) -> list[expire.Expired]:
        """One TTL sweep of ``buckets``, at most ``limit`` removals each (pipelined)."""
        calls = [expire.call(self.keyspace, bucket, limit, ttl_ms) for bucket in buckets]
        return [expire.parse(raw, limit) for raw in run_many(self.client, calls)]

    # -- indexes ---------------------------------------------------------------------------

    def dirty(
        self, buckets: Sequence[int], older_than_ms: int | None = None, limit: int = 1000
    ) -> list[str]:
        """Refs with a backlog, across ``buckets`` (one pipelined round trip)."""
        pipe = self.client.pipeline(transaction=False)
        top = "+inf" if older_than_ms is None else older_than_ms
        for bucket in buckets:
            pipe.zrangebyscore(
                self.keyspace.bucket_keys(bucket).dirty, "-inf", top, start=0, num=limit
            )
        return [text(ref) for refs in pipe.execute() for ref in refs]

    def listing(self, buckets: Sequence[int], limit: int = 20) -> Listing:
        """Threads with a backlog and quarantined threads, the ``limit`` oldest of each
        with the backlog the same read saw (one read per bucket, pipelined)."""
        calls = [backlog.call(self.keyspace, bucket, limit) for bucket in buckets]
        return backlog.parse(run_many(self.client, calls), limit)

    def quarantined(self, buckets: Sequence[int]) -> list[str]:
        pipe = self.client.pipeline(transaction=False)
        for bucket in buckets:
            pipe.zrange(self.keyspace.bucket_keys(bucket).quarantine, 0, -1)
        return [text(ref) for refs in pipe.execute() for ref in refs]

    def threads(self, buckets: Sequence[int]) -> list[str]:
        pipe = self.client.pipeline(transaction=False)
        for bucket in buckets:
            pipe.smembers(self.keyspace.bucket_keys(bucket).threads)
        return sorted(text(ref) for refs in pipe.execute() for ref in refs)

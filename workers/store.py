"""The thread store over a synchronous Redis client: each method is one exchange."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from redis.cluster import RedisCluster

from threadfold.core.fold import Effect
from threadfold.core.keys import Keyspace
from threadfold.workers import ops
from threadfold.workers.redis_io import Call, SyncClient, run, run_many, run_merged
from threadfold.workers.storage.pages import MAX_PAGE_RECORDS


class Store:
    """Thread state in Redis (standalone or Cluster) for producers, workers and tools."""

    def __init__(self, client: SyncClient, keyspace: Keyspace) -> None:
        self.client = client
        self.keyspace = keyspace

    # -- draining --------------------------------------------------------------------------

    def read_batch(self, ref: str, max_entries: int) -> ops.Batch:
        return self.read_batches([ref], max_entries)[0]

    def read_batches(
        self, refs: Sequence[str], max_entries: int, hints: Mapping[str, str] | None = None
    ) -> list[ops.Batch]:
        """The next batch of each thread, in two pipelined round trips for all of them:
        meta (a read-only script call) and log entries (one plain XREAD), then one script
        call for the attempt count, the candidate positions of the entries' ids and their
        pages. ``hints``:
        a cursor each thread had, to read its log from (when applied entries are kept
        for replay; without one the log is read from its start)."""
        hints = hints or {}
        cluster = isinstance(self.client, RedisCluster)
        reads, owners = ops.read_calls(self.keyspace, refs, max_entries, hints, cluster)
        read = ops.parse_reads(self.keyspace, owners, run_many(self.client, reads), hints,
                               max_entries)
        batches = [read[ref] for ref in refs]
        asked = [(ref, b) for ref, b in zip(refs, batches, strict=True) if b.entries]
        calls = [ops.candidates_call(self.keyspace, ref, b) for ref, b in asked]
        for (_, batch), raw in zip(asked, run_merged(self.client, calls), strict=True):
            ops.add_candidates(batch, raw)
        return batches

    def positions_many(self, items: Sequence[tuple[str, Collection[str]]]) -> list[ops.Found]:
        """The stored positions of the given ids and the pages holding them, for several
        threads in one round trip."""
        asked = [(ref, list(ids)) for ref, ids in items if ids]
        calls = [ops.lookup_call(self.keyspace, ref, ids) for ref, ids in asked]
        raws = run_many(self.client, calls) if calls else []
        found = {ref: ops.parse_lookup(raw) for (ref, _), raw in zip(asked, raws, strict=True)}
        return [found.get(ref, ops.Found({}, {}, MAX_PAGE_RECORDS)) for ref, _ in items]

    def commit_many(self, calls: Sequence[Call]) -> list[ops.Committed]:
        """Several threads' compare-and-set commits in one pipelined round trip."""
        return [ops.parse_commit(raw) for raw in run_merged(self.client, calls)]

    def commit(
        self,
        ref: str,
        batch: ops.Batch,
        new_cursor: str,
        next_position: int,
        effect: Effect,
        *,
        known: Mapping[str, int],
        pages: Mapping[int, bytes],
        per: int,
        applied: int,
        retention_ms: int,
        wake_ms: int,
        encode: Any,
    ) -> ops.Committed:
        """Compare-and-set commit of a folded batch's net effect."""
        call = ops.commit_call(
            self.keyspace,
            ref,
            fence=batch.cursor,
            new_cursor=new_cursor,
            next_position=next_position,
            effect=effect,
            known=known,
            pages=pages,
            per=per,
            applied=applied,
            retention_ms=retention_ms,
            wake_ms=wake_ms,
            encode=encode,
        )
        return ops.parse_commit(run(self.client, call)[0])

    def fail(self, ref: str, limit: int, reason: str, entry: str, backoff_ms: int) -> bool:
        """Count a failed drain; True when the thread is now quarantined."""
        call = ops.fail_call(
            self.keyspace, ref, limit=limit, reason=reason, entry=entry, backoff_ms=backoff_ms
        )
        return bool(int(run(self.client, call)))

    def retry(self, ref: str, wake_ms: int, *, skip: bool = False) -> ops.Retried | None:
        """Lift a quarantine, optionally skipping the entry the drain failed on; None
        (and nothing written) when the thread does not exist."""
        return ops.parse_retry(run(self.client, ops.retry_call(self.keyspace, ref, wake_ms, skip)))

    def wake_if_stalled(self, refs: Sequence[str], wake_ms: int) -> list[str]:
        """The refs whose flag this call set: the caller must send their wake-ups."""
        calls = [ops.wake_call(self.keyspace, ref, wake_ms) for ref in refs]
        return [
            ref for ref, raw in zip(refs, run_many(self.client, calls), strict=True) if int(raw)
        ]

    # -- reading ---------------------------------------------------------------------------

    def read_state(
        self, ref: str, mode: str = "all", anchor: str = "", limit: int = -1
    ) -> ops.StatePage | None:
        return ops.parse_read_state(
            run(self.client, ops.read_state_call(self.keyspace, ref, mode, anchor, limit)),
            mode,
            limit,
        )

    def status(self, ref: str) -> ops.ThreadStatus | None:
        return ops.parse_status(run(self.client, ops.status_call(self.keyspace, ref)))

    def delete(self, ref: str) -> bool:
        return bool(int(run(self.client, ops.delete_call(self.keyspace, ref))))

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
        return [ops.text(ref) for refs in pipe.execute() for ref in refs]

    def listing(self, buckets: Sequence[int], limit: int = 20) -> ops.Listing:
        """Threads with a backlog and quarantined threads, the ``limit`` oldest of each
        with the backlog the same read saw (one read per bucket, pipelined)."""
        calls = [ops.backlog_call(self.keyspace, bucket, limit) for bucket in buckets]
        return ops.parse_listing(run_many(self.client, calls), limit)

    def quarantined(self, buckets: Sequence[int]) -> list[str]:
        pipe = self.client.pipeline(transaction=False)
        for bucket in buckets:
            pipe.zrange(self.keyspace.bucket_keys(bucket).quarantine, 0, -1)
        return [ops.text(ref) for refs in pipe.execute() for ref in refs]

    def threads(self, buckets: Sequence[int]) -> list[str]:
        pipe = self.client.pipeline(transaction=False)
        for bucket in buckets:
            pipe.smembers(self.keyspace.bucket_keys(bucket).threads)
        return sorted(ops.text(ref) for refs in pipe.execute() for ref in refs)

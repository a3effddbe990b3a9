"""Draining one thread: read after the cursor, fold a batch, commit by compare-and-set.

The task that runs this carries only the thread's ref and may run twice or
concurrently. Correctness comes from the commit's compare-and-set on the cursor, never
from a lock: a stale or concurrent drainer's commit is refused, and it re-reads.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import msgspec
from redis.exceptions import OutOfMemoryError

from threadfold.core.codec import decode_messages, decode_stored
from threadfold.core.errors import RedisFull, ThreadfoldError
from threadfold.core.fold import ThreadFold
from threadfold.core.messages import REMOVE_ALL_MESSAGES, BaseMessage, is_chunk
from threadfold.workers.metrics import Metrics, record_commit
from threadfold.workers.runtime.drain.batch import Batch, read_batches
from threadfold.workers.settings import Settings
from threadfold.workers.storage.commit import CommitPlan, Committed
from threadfold.workers.storage.lookup import Found
from threadfold.workers.storage.store import Store

log = logging.getLogger("threadfold.drain")


@dataclass(slots=True)
class DrainReport:
    """What one drain did."""

    ref: str
    batches: int = 0
    entries: int = 0
    conflicts: int = 0
    quarantined: bool = False
    failed: bool = False
    handed_off: bool = False
    #: Redis was full (out of memory) until the time budget ran out: handed off.
    full: bool = False


#: The first and longest pause between two tries of a round Redis refused as full.
FULL_PAUSE_FIRST, FULL_PAUSE_MAX = 0.05, 0.5


class UnfoldableEntry(ThreadfoldError):
    """Raised when a log entry cannot be decoded or folded (a bug or a hand-written entry)."""

    def __init__(self, entry: str, reason: str) -> None:
        super().__init__(f"log entry {entry}: {reason}")
        self.entry = entry
        self.reason = reason


Decoded = list[tuple[str, list[BaseMessage]]]


def lag_ms(entry: str, now_ms: int) -> int:
    """An entry's enqueue-to-visible lag: the commit's time (Redis's clock) less the ms
    of the entry's id, at least 0. After Redis's clock jumps back, its stream ids stay
    ahead of it (they never go back), and a negative lag would lower the histogram's
    ``_sum``, a counter Prometheus takes for a reset when it decreases."""
    return max(0, now_ms - int(entry.partition("-")[0]))


def _decode(batch: Batch) -> Decoded:
    """Decode entries up to the first bad one; a bad first entry is poison."""
    decoded: list[tuple[str, list[BaseMessage]]] = []
    for entry, payload in batch.entries:
        try:
            decoded.append((entry, decode_messages(payload)))
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            if not decoded:
                # An empty payload is an entry without its field 'd' (written by hand).
                why = "no payload (stream field 'd')" if not payload else str(exc)
                raise UnfoldableEntry(entry, f"cannot decode: {why}") from exc
            break  # fold what precedes it; the next read starts at the bad entry
    return decoded


def _mentioned(decoded: list[tuple[str, list[BaseMessage]]]) -> set[str]:
    ids = {m.id for _, msgs in decoded for m in msgs if m.id is not None}
    ids.discard(REMOVE_ALL_MESSAGES)
    return ids


class Drainer:
    """Drains threads for one worker process."""

    def __init__(
        self,
        store: Store,
        settings: Settings,
        clock: Callable[[], float] = time.monotonic,
        metrics: Metrics | None = None,
    ) -> None:
        self.store = store
        self.settings = settings
        self.clock = clock
        self.metrics = metrics or Metrics(
            settings.keyspace, "worker", settings.metrics_flush_seconds
        )
        #: Where to read a thread's log from when applied entries are kept for replay
        #: (retention): the cursor its last commit here left. Without retention the log
        #: starts at the cursor and is read from its start.
        self._hints: dict[str, str] = {}

    def drain(self, ref: str, deadline: float | None = None) -> DrainReport:
        """Fold every entry after the thread's cursor (see :meth:`drain_many`)."""
        return self.drain_many([ref], deadline)[0]

    def drain_many(self, refs: Sequence[str], deadline: float | None = None) -> list[DrainReport]:
        """Drain threads together, batch by batch, until none has a backlog or the time
        budget is spent (those left are ``handed_off``: the caller sends a new wake-up).

        Each round is three round trips for all the threads: the read (a script call
        for their meta, one XREAD for their logs), the positions and pages the batches
        need (one script call), the commit (one script call); a fourth, a lookup by id,
        only when an entry does not list its ids' fingerprints. A wake-up for many quiet
        threads, the common case under spread load, costs little more than one.
        """
        if deadline is None:
            deadline = self.clock() + self.settings.drain_seconds
        reports = {ref: DrainReport(ref) for ref in refs}
        pending = list(reports)
        pause = FULL_PAUSE_FIRST
        while pending:
            try:
                pending = self._round(pending, reports)
            except RedisFull:
                # Nothing of the refused call was written, and a read that counts the
                # attempt is one script: a refused round counts no attempt toward
                # quarantine. Wait for memory within the budget, then hand off: letting
                # the task fail would leave the thread to its flag's lease and the
                # sweeper (WAKE_TTL_SECONDS after memory is freed, not a pause).
                if self.clock() >= deadline:
                    for ref in pending:
                        reports[ref].handed_off = reports[ref].full = True
                    break
                time.sleep(min(pause, max(0.0, deadline - self.clock())))
                pause = min(2 * pause, FULL_PAUSE_MAX)
                continue
            if pending and self.clock() >= deadline:
                for ref in pending:
                    reports[ref].handed_off = True
                break
        return list(reports.values())

    def _round(self, refs: list[str], reports: dict[str, DrainReport]) -> list[str]:
        """One batch for each thread; returns the threads to go round again."""
        work: list[tuple[str, Batch, Decoded]] = []
        hints, retained = self._hints, self.settings.retention_ms > 0
        again = []
        batches = read_batches(self.store, refs, self.settings.batch_size, hints)
        for ref, batch in zip(refs, batches, strict=True):
            if batch.reread or retained:  # the next read starts at this cursor
                self._hint(ref, batch.cursor)
            if batch.reread:  # read from too far back, or the fence moved meanwhile
                again.append(ref)
                continue
            if batch.quarantined or not batch.entries:
                continue
            try:
                work.append((ref, batch, _decode(batch)))
            except UnfoldableEntry as exc:
                self._failed(ref, batch.fence, exc, reports[ref])
        # Entries that list their ids' fingerprints came with the candidate positions and
        # their pages; others (written by hand) need a lookup.
        mentioned = [_mentioned(d) for _, _, d in work]
        known = [b.known(ids) for (_, b, _), ids in zip(work, mentioned, strict=True)]
        asked = [
            (ref, ids)
            for (ref, _, _), ids, found in zip(work, mentioned, known, strict=True)
            if found is None
        ]
        looked_up = iter(self.store.positions_many(asked) if asked else [])
        plans, kept = [], []
        for (ref, batch, decoded), found in zip(work, known, strict=True):
            stored = (
                Found(found, batch.pages, batch.per) if found is not None else next(looked_up)
            )
            try:
                plan, committed = self._commit_or_prefix(ref, batch, decoded, stored)
            except UnfoldableEntry as exc:
                self._failed(ref, batch.fence, exc, reports[ref])
                continue
            plans.append(plan)
            kept.append((ref, committed))
        for (ref, decoded), done in zip(kept, self.store.commit_many(plans), strict=True):
            if done.ok and retained:
                self._hint(ref, decoded[-1][0])
            if self._settle(reports[ref], decoded, done):
                again.append(ref)
        return again

    def _hint(self, ref: str, cursor: str) -> None:
        hints = self._hints
        if len(hints) >= 100_000 and ref not in hints:  # a bound: a thread without a
            hints.clear()  # hint reads from its log's start once, then has one again
        hints[ref] = cursor

    def _commit_or_prefix(
        self, ref: str, batch: Batch, decoded: Decoded, stored: Found
    ) -> tuple[CommitPlan, Decoded]:
        """The batch's commit; when an entry fails to fold, the commit of the entries
        before it (as a bad payload ends a batch before it): the thread gets past the
        good entries, and the failing one is first after the cursor, where the next
        round fails on it alone, counts it, names it, and `retry --skip` finds it.
        Raises :class:`UnfoldableEntry` when the first entry fails."""
        try:
            return self._plan(ref, batch, decoded, stored), decoded
        except UnfoldableEntry as exc:
            failed = next(i for i, (entry, _) in enumerate(decoded) if entry == exc.entry)
            if failed == 0:
                raise
            prefix = decoded[:failed]  # a fresh fold: the failed one was left half-applied
            return self._plan(ref, batch, prefix, stored), prefix

    def _plan(self, ref: str, batch: Batch, decoded: Decoded, stored: Found) -> CommitPlan:
        """Fold the batch over the stored positions it mentions; the commit of its net
        effect."""
        fold = ThreadFold(
            stored.positions,
            batch.next_position,
            self._bodies(decoded, stored),
            merge_chunks=self.settings.merge_chunks,
        )
        for entry, messages in decoded:
            try:
                fold.apply(messages)
            except Exception as exc:  # any failure here marks the entry as poison
                raise UnfoldableEntry(entry, f"cannot fold: {exc}") from exc
        return CommitPlan(
            ref,
            batch.fence,
            decoded[-1][0],
            len(decoded),
            fold.next_position,
            fold.take_effect(),
            stored,
            self.settings.retention_ms,
            self.settings.wake_ttl_ms,
            self.settings.feed_limits,
            self.settings.thread_ttl_ms,
        )

    def _settle(self, report: DrainReport, decoded: Decoded, done: Committed) -> bool:
        """Account for one commit; True when the thread needs another round."""
        if not done.ok:
            report.conflicts += 1
            self.metrics.add("commit_conflicts")
            return True  # a concurrent drainer moved the fence: re-read
        report.batches += 1
        report.entries += len(decoded)
        self._record(decoded, done.now_ms)
        return done.more

    def _record(self, decoded: list[tuple[str, list[BaseMessage]]], now_ms: int) -> None:
        """Batch size and enqueue-to-visible lag (entry ids carry their enqueue ms)."""
        metrics = self.metrics
        record_commit(metrics, len(decoded), (lag_ms(entry, now_ms) for entry, _ in decoded))
        if metrics.due():
            self.flush_metrics()

    def flush_metrics(self) -> None:
        try:
            self.metrics.flush(self.store.client)
        except (OutOfMemoryError, RedisFull):  # once a second while full: no traceback
            log.warning("could not flush metrics: Redis is full")
        except Exception:  # metrics must never fail a drain
            log.warning("could not flush metrics", exc_info=True)

    def _bodies(self, decoded: Decoded, stored: Found) -> dict[str, BaseMessage] | None:
        """Stored bodies of the chunks' ids, from the pages read with the batch: only
        chunk merging needs them."""
        if not self.settings.merge_chunks:
            return None
        chunks = {m.id for _, msgs in decoded for m in msgs if m.id is not None and is_chunk(m)}
        return {
            key: decode_stored(body, key)
            for key, body in stored.bodies().items()
            if key in chunks
        }

    def _failed(
        self, ref: str, fence: str, exc: UnfoldableEntry, report: DrainReport
    ) -> DrainReport:
        backoff_ms = self.settings.wake_ttl_ms
        report.failed = True
        self.metrics.add("drain_failures")
        report.quarantined = self.store.fail(
            ref, self.settings.failure_limit, exc.reason[:500], exc.entry, backoff_ms, fence=fence
        )
        log.warning("thread %s: %s (quarantined=%s)", ref, exc, report.quarantined)
        if report.quarantined:
            self.metrics.add("quarantines")
        return report

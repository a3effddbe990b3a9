"""Draining one thread: read after the cursor, fold a batch, commit by compare-and-set.

The task that runs this carries only the thread's ref and may run twice or
concurrently. Correctness comes from the commit's compare-and-set on the cursor, never
from a lock: a stale or concurrent drainer's commit is refused, and it re-reads.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import msgspec

from core.codec import decode_messages, encode_message
from core.fold import ThreadFold
from core.messages import REMOVE_ALL_MESSAGES, BaseMessage, is_chunk
from workers.metrics import BATCH_BUCKETS, LAG_BUCKETS_MS, Metrics
from workers.ops import Batch, Committed
from workers.settings import Settings
from workers.store import Store

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


class PoisonEntry(Exception):
    """Raised when a log entry cannot be decoded or folded (a bug or a hand-written entry)."""

    def __init__(self, entry: str, reason: str) -> None:
        super().__init__(f"log entry {entry}: {reason}")
        self.entry = entry
        self.reason = reason


def _decode(batch: Batch) -> list[tuple[str, list[BaseMessage]]]:
    """Decode entries up to the first bad one; a bad first entry is poison."""
    decoded: list[tuple[str, list[BaseMessage]]] = []
    for entry, payload in batch.entries:
        try:
            decoded.append((entry, decode_messages(payload)))
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            if not decoded:
                raise PoisonEntry(entry, f"cannot decode: {exc}") from exc
            break  # fold what precedes it; the next read starts at the bad entry
    return decoded


def _mentioned(decoded: list[tuple[str, list[BaseMessage]]]) -> list[str]:
    ids = {m.id for _, msgs in decoded for m in msgs if m.id is not None}
    ids.discard(REMOVE_ALL_MESSAGES)
    return list(ids)


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
        self.metrics = metrics or Metrics(settings.keyspace, "worker")

    def drain(self, ref: str, deadline: float | None = None) -> DrainReport:
        """Fold every entry after the cursor, batch by batch, until none is left or the
        time budget is spent (then ``handed_off``: the caller sends a new wake-up)."""
        report = DrainReport(ref)
        if deadline is None:
            deadline = self.clock() + self.settings.drain_seconds
        while True:
            batch = self.store.read_batch(ref, self.settings.batch_size)
            if batch.quarantined or not batch.entries:
                return report
            try:
                done = self._fold_and_commit(ref, batch, report)
            except PoisonEntry as exc:
                return self._failed(ref, exc, report)
            if not done.ok:
                report.conflicts += 1
                self.metrics.add("commit_conflicts")
                continue
            if not done.more:
                return report
            if self.clock() >= deadline:
                report.handed_off = True
                return report

    def _fold_and_commit(self, ref: str, batch: Batch, report: DrainReport) -> Committed:
        decoded = _decode(batch)
        ids = _mentioned(decoded)
        fold = ThreadFold(
            self.store.positions(ref, ids),
            batch.next_position,
            self._bodies(ref, decoded),
            merge_chunks=self.settings.merge_chunks,
        )
        for entry, messages in decoded:
            try:
                fold.apply(messages)
            except Exception as exc:  # any failure here marks the entry as poison
                raise PoisonEntry(entry, f"cannot fold: {exc}") from exc
        last = decoded[-1][0]
        done = self.store.commit(
            ref,
            batch,
            last,
            fold.next_position,
            fold.take_effect(),
            applied=len(decoded),
            retention_ms=self.settings.retention_ms,
            wake_ms=self.settings.wake_ttl_ms,
            encode=encode_message,
        )
        if done.ok:
            report.batches += 1
            report.entries += len(decoded)
            self._record(decoded, done.now_ms)
        return done

    def _record(self, decoded: list[tuple[str, list[BaseMessage]]], now_ms: int) -> None:
        """Batch size and enqueue-to-visible lag (entry ids carry their enqueue ms)."""
        metrics = self.metrics
        metrics.add("commits")
        metrics.add("entries_applied", len(decoded))
        metrics.observe("batch_entries", len(decoded), BATCH_BUCKETS)
        lags = (now_ms - int(entry.partition("-")[0]) for entry, _ in decoded)
        metrics.observe_many("visible_lag_ms", lags, LAG_BUCKETS_MS)
        if metrics.due():
            self.flush_metrics()

    def flush_metrics(self) -> None:
        try:
            self.metrics.flush(self.store.client)
        except Exception:  # metrics must never fail a drain
            log.warning("could not flush metrics", exc_info=True)

    def _bodies(
        self, ref: str, decoded: list[tuple[str, list[BaseMessage]]]
    ) -> dict[str, BaseMessage] | None:
        """Stored bodies of the chunks' ids: only chunk merging needs them."""
        if not self.settings.merge_chunks:
            return None
        ids = {m.id for _, msgs in decoded for m in msgs if m.id is not None and is_chunk(m)}
        return self.store.bodies(ref, list(ids))

    def _failed(self, ref: str, exc: PoisonEntry, report: DrainReport) -> DrainReport:
        backoff_ms = self.settings.wake_ttl_ms
        report.failed = True
        self.metrics.add("drain_failures")
        report.quarantined = self.store.fail(
            ref, self.settings.failure_limit, exc.reason[:500], exc.entry, backoff_ms
        )
        log.warning("thread %s: %s (quarantined=%s)", ref, exc, report.quarantined)
        if report.quarantined:
            self.metrics.add("quarantines")
        return report

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
from workers.ops import Batch
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
    lag_ms: list[int] | None = None


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
        self, store: Store, settings: Settings, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.store = store
        self.settings = settings
        self.clock = clock

    def drain(self, ref: str) -> DrainReport:
        """Fold every entry after the cursor, batch by batch, until none is left or the
        time budget is spent (then ``handed_off``: the caller sends a new wake-up)."""
        report = DrainReport(ref)
        deadline = self.clock() + self.settings.drain_seconds
        while True:
            batch = self.store.read_batch(ref, self.settings.batch_size)
            if batch.quarantined or not batch.entries:
                return report
            try:
                committed, more = self._fold_and_commit(ref, batch, report)
            except PoisonEntry as exc:
                return self._failed(ref, exc, report)
            if not committed:
                report.conflicts += 1
                continue
            if not more:
                return report
            if self.clock() >= deadline:
                report.handed_off = True
                return report

    def _fold_and_commit(self, ref: str, batch: Batch, report: DrainReport) -> tuple[bool, bool]:
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
        committed, more = self.store.commit(
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
        if committed:
            report.batches += 1
            report.entries += len(decoded)
        return committed, more

    def _bodies(
        self, ref: str, decoded: list[tuple[str, list[BaseMessage]]]
    ) -> dict[str, BaseMessage]:
        """Stored bodies of the chunks' ids: only chunk merging needs them."""
        if not self.settings.merge_chunks:
            return {}
        ids = {m.id for _, msgs in decoded for m in msgs if m.id is not None and is_chunk(m)}
        return self.store.bodies(ref, list(ids))

    def _failed(self, ref: str, exc: PoisonEntry, report: DrainReport) -> DrainReport:
        backoff_ms = self.settings.wake_ttl_ms
        report.failed = True
        report.quarantined = self.store.fail(
            ref, self.settings.failure_limit, exc.reason[:500], exc.entry, backoff_ms
        )
        log.warning("thread %s: %s (quarantined=%s)", ref, exc, report.quarantined)
        return report

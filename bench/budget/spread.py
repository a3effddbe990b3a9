"""The spread shape: one one-message delta per thread per call, threads taken in turn.

The deltas are the pipeline benchmark's mix (:class:`bench.pipeline.workload.Mix`: ~70%
appends, half of them without an id, ~20% updates, ~10% removes of ids the thread
holds), made before any clock starts. Consecutive deltas of a thread are a whole sweep
of the threads apart (:func:`bench.pipeline.workload.round_robin`), so a worker's batch
holds about one delta: the shape where every per-delta and per-batch cost shows.

Each round plans its deltas once and every part of the round sends the same ones (to
threads of its own prefix), so the parts and their floors are measured on the same
messages. Updates and removes target client-chosen ids only: an id the producer stamps
is known only once its call returned, and planning ahead is what keeps the harness out
of the timed loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bench.pipeline.workload import Mix, Planned, ref_of, round_robin, thread_id
from threadfold.testing import Ledger
from threadfold.types import Appended

#: One call: the thread id and its one-message delta.
Call = tuple[str, list[dict[str, Any]]]


def plan(threads: int, per_thread: int, seed: int) -> list[Planned]:
    """``threads * per_thread`` deltas in the spread order."""
    mix = Mix(threads, seed)
    return [mix.next(t) for t in round_robin(threads, per_thread)]


def calls(planned: Sequence[Planned], prefix: str) -> list[Call]:
    """The calls of one part, built before its clock starts (ids formatted, lists made)."""
    return [(thread_id(p.thread, prefix), [p.message]) for p in planned]


def ops(planned: Sequence[Planned]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for p in planned:
        counts[p.op] = counts.get(p.op, 0) + 1
    return counts


def record(sent: Sequence[Call], answers: Sequence[Appended]) -> Ledger:
    """What each call was promised (its version and stamped ids), for the state check."""
    out = Ledger()
    for (thread, messages), answer in zip(sent, answers, strict=True):
        out.add(ref_of(thread), answer.version, messages, answer.ids)
    return out

"""The peer benchmark's workload: ``threads`` threads of ``length`` messages, then
``per_thread`` one-message deltas each (70% appends, 20% edits, 10% removes of
messages that exist then: :func:`bench.common.inputs.mix`), sent spread out: every
thread's delta ``j`` before any thread's delta ``j + 1``, so consecutive calls almost
never touch one thread (one wake-up, one commit per delta or two).

Thread ``i``'s messages are a function of the seed and ``i`` alone, so every contender
(and every writer process, which rebuilds its own threads rather than receive them
pickled) sees the same logical deltas for the same ``i``, whatever its thread ids.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from bench.common.inputs import Dict, Workload, mix


@dataclass(frozen=True)
class Shape:
    """One size of the workload: the prefilled thread length, how many deltas follow in
    each thread, and how many threads each side writes (LangGraph is given fewer: at its
    rate the same count would take hours; its threads are the first of ours)."""

    length: int
    per_thread: int
    threads: int
    peer_threads: int
    seed: int = 24

    def thread(self, i: int) -> Workload:
        return mix(self.length, self.per_thread, self.seed * 1_000_003 + i)


def mine(count: int, writer: int, writers: int) -> list[int]:
    """The thread numbers a writer owns: every ``writers``-th, from its own."""
    return list(range(writer, count, writers))


def spread(workloads: dict[int, Workload]) -> Iterator[tuple[int, Dict]]:
    """``(thread, delta)`` in the spread order: round ``j`` is every thread's delta ``j``."""
    rounds = max((len(w.deltas) for w in workloads.values()), default=0)
    for j in range(rounds):
        for i, w in workloads.items():
            if j < len(w.deltas):
                yield i, w.deltas[j]

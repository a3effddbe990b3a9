"""``ThreadFold``, the workers' incremental fold: throughput, and cost against thread length.

Each batch is one ``apply`` followed by ``take_effect``, as a worker does it. Two modes:
``worker`` (``ThreadFold()``: positions only, the effect carries the bodies; the targets
are judged on it) and ``tracked`` (``track=True``: bodies kept too). The fold is seeded
untimed (a copy of a prebuilt fold's dicts), so only the batches are timed.

Checks: the timed run's own final positions must order the ids exactly as LangGraph's
final state does; and an untimed run of the same fold, its effects written to a store
as a worker writes them, must give LangGraph's final state message for message.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Final

from langchain_core.messages import convert_to_messages
from langgraph.graph.message import _messages_delta_reducer

from bench.common.checks import Check, first_difference, lc_dump
from bench.common.inputs import Workload, appends, batches, thread, updates
from bench.common.timing import Case, Repeats, Timing, interleaved, many_short
from threadfold import core

WORKER: Final = "worker"
TRACKED: Final = "tracked"
MODES: Final = (WORKER, TRACKED)
APPEND: Final = "ThreadFold appends"
FLOOR: Final = "plain dict store d[m.id] = m (floor)"


@dataclass(frozen=True)
class FoldRow:
    """One fold workload, mode and batch size."""

    workload: str
    kind: str
    mode: str
    length: int
    batch: int
    deltas: int
    best_s: float
    median_s: float
    rounds: int
    check: Check

    @property
    def rate(self) -> float:
        """Deltas per second, from the best run."""
        return self.deltas / self.best_s

    @property
    def ns_per_delta(self) -> float:
        return self.best_s / self.deltas * 1e9

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "deltas_per_s": self.rate, "ns_per_delta": self.ns_per_delta}


@dataclass(frozen=True)
class LengthCost:
    """Per-delta cost of ``kind`` on a thread of ``length`` messages."""

    kind: str
    length: int
    batch: int
    reps: int
    best_ns: float
    median_ns: float


@dataclass(frozen=True)
class Seed:
    """A prebuilt fold's state, copied into a fresh fold for every run."""

    positions: dict[str, int]
    messages: dict[str, core.BaseMessage]
    next_position: int

    @classmethod
    def of(cls, initial: Sequence[core.BaseMessage]) -> Seed:
        fold = core.ThreadFold.from_messages(initial)
        assert fold.messages is not None  # from_messages tracks
        return cls(fold.positions, fold.messages, fold.next_position)

    def fold(self, mode: str) -> core.ThreadFold:
        if mode == TRACKED:
            return core.ThreadFold(self.positions, self.next_position, self.messages)
        return core.ThreadFold(self.positions, self.next_position)


Calls = list[list[core.BaseMessage]]


def _case(seed: Seed, mode: str, calls: Calls) -> Case[core.ThreadFold]:
    def setup() -> Callable[[], core.ThreadFold]:
        fold = seed.fold(mode)

        def run() -> core.ThreadFold:
            for batch in calls:
                fold.apply(batch)
                fold.take_effect()
            return fold

        return run

    return setup


def replay(seed: Seed, calls: Calls) -> list[core.BaseMessage]:
    """A worker fold's effects written to a store (id -> position, message), in order."""
    store = {key: (pos, seed.messages[key]) for key, pos in seed.positions.items()}
    fold = seed.fold(WORKER)
    for batch in calls:
        fold.apply(batch)
        effect = fold.take_effect()
        if effect.cleared:
            store.clear()
        for key in effect.removed:
            store.pop(key, None)
        store.update(effect.upserts)
    return [message for _, message in sorted(store.values(), key=lambda entry: entry[0])]


def _expected(workload: Workload) -> list[dict[str, Any]]:
    """LangGraph's delta reducer on the whole workload, in one call, dumped."""
    state: Any = convert_to_messages(workload.initial)
    deltas: Any = convert_to_messages(workload.deltas)
    return lc_dump(_messages_delta_reducer(state, [deltas]))


@dataclass(frozen=True)
class Prepared:
    """A fold workload ready to time: seed, our deltas, and LangGraph's final state."""

    workload: Workload
    kind: str
    seed: Seed
    deltas: list[core.BaseMessage]
    expected: list[dict[str, Any]]

    @classmethod
    def of(cls, workload: Workload, kind: str) -> Prepared:
        seed = Seed.of(core.to_messages(workload.initial))
        deltas = core.to_messages(workload.deltas)
        return cls(workload, kind, seed, deltas, _expected(workload))

    def check(self, mode: str, calls: Calls, result: core.ThreadFold) -> Check:
        name = f"ThreadFold {self.workload.name} / {mode} / batch {len(calls[0])}"
        if mode == TRACKED:
            detail = first_difference(core.dump_messages(result.ordered()), self.expected)
            return Check(name, not detail, detail)
        ids = sorted(result.positions, key=result.positions.__getitem__)
        if ids != [m["id"] for m in self.expected]:
            return Check(name, False, "the timed run's positions order the ids differently")
        detail = first_difference(core.dump_messages(replay(self.seed, calls)), self.expected)
        return Check(name, not detail, f"replayed effects: {detail}" if detail else "")

    def row(self, mode: str, batch: int, timing: Timing, check: Check) -> FoldRow:
        return FoldRow(self.workload.name, self.kind, mode, len(self.workload.initial), batch,
                       len(self.deltas), timing.best, timing.median, len(timing.seconds),
                       check)


def throughput(prepared: Sequence[Prepared], batch_sizes: Sequence[int],
               repeats: Repeats) -> list[FoldRow]:
    """The fold at each batch size, in both modes; the cases of one batch size are timed
    in interleaved rounds, so that thread lengths and modes meet the same load."""
    rows: list[FoldRow] = []
    for batch in batch_sizes:
        calls = {p.workload.name: batches(p.deltas, batch) for p in prepared}
        cases = {f"{p.workload.name} / {mode}": _case(p.seed, mode, calls[p.workload.name])
                 for p in prepared for mode in MODES}
        outcome = interleaved(cases, repeats)
        for p in prepared:
            for mode in MODES:
                key = f"{p.workload.name} / {mode}"
                check = p.check(mode, calls[p.workload.name], outcome.results[key])
                rows.append(p.row(mode, batch, outcome.timings[key], check))
    return rows


def _floor_case(prepared: Prepared) -> Case[object]:
    def setup() -> Callable[[], object]:
        target: dict[Any, core.BaseMessage] = dict(prepared.seed.messages)
        deltas = prepared.deltas

        def run() -> object:
            for m in deltas:
                target[m.id] = m
            return target

        return run

    return setup


def dict_floor(prepared: Sequence[Prepared], repeats: Repeats) -> list[LengthCost]:
    """The update workloads as bare dict stores: what the memory system alone costs.

    Updates of random ids touch random entries (and id strings) of the thread, so a
    longer thread misses the CPU caches more; no fold can be cheaper than this.
    """
    outcome = interleaved({p.workload.name: _floor_case(p) for p in prepared}, repeats)
    costs: list[LengthCost] = []
    for p in prepared:
        timing = outcome.timings[p.workload.name]
        per = 1e9 / len(p.deltas)
        costs.append(LengthCost(FLOOR, len(p.workload.initial), 1, len(timing.seconds),
                                timing.best * per, timing.median * per))
    return costs


def _append_setup(length: int, batch: int, seed: int) -> Case[object]:
    rng = random.Random(seed)
    prebuilt = Seed.of(core.to_messages(thread(length, rng)))
    fresh = core.to_messages(thread(batch, rng, start=length))

    def setup() -> Callable[[], object]:
        fold = prebuilt.fold(WORKER)

        def run() -> object:
            fold.apply(fresh)
            return fold.take_effect()

        return run

    return setup


def append_cost(lengths: Sequence[int], batch: int, reps: int, seed: int) -> list[LengthCost]:
    """One batch of ``batch`` appends onto a thread of each length (worker mode), timed
    ``reps`` times, alternating between the lengths, each onto a fresh copy."""
    setups = {str(n): _append_setup(n, batch, seed) for n in lengths}
    timings = many_short(setups, reps)
    return [LengthCost(APPEND, n, batch, reps, timings[str(n)].best / batch * 1e9,
                       timings[str(n)].median / batch * 1e9) for n in lengths]


def run(deltas: int, lengths: Sequence[int], batch_sizes: Sequence[int], *, repeats: Repeats,
        reps: int, seed: int) -> tuple[list[FoldRow], list[LengthCost]]:
    """Appends from empty; updates into each thread length, and their dict floor; then
    the cost of a batch of appends by thread length."""
    rows = throughput([Prepared.of(appends(deltas, seed), "append")], batch_sizes, repeats)
    prepared = [Prepared.of(updates(n, deltas, seed), "update") for n in lengths]
    rows += throughput(prepared, batch_sizes, repeats)
    costs = dict_floor(prepared, repeats) + append_cost(lengths, 100, reps, seed)
    return rows, costs

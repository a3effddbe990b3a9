"""Timing on a shared, noisy machine: interleaved rounds, best-of and median.

Contenders are run in rounds, one run each per round and the order rotated, so that a
burst of load elsewhere hits them alike; speed is then compared as a ratio within one
run. Runs are timed in CPU time of the running thread (``thread_time``): on two cores
shared with other jobs, wall time mostly measures how long the scheduler kept the
benchmark waiting. As ``timeit`` does, the garbage collector is off while a run is
timed, for every contender alike.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")

#: A contender: called untimed to set up, it returns the thunk that is timed.
Case = Callable[[], Callable[[], T]]


@dataclass(frozen=True)
class Repeats:
    """How many rounds: at least ``least``, then up to ``most`` while the timed runs of one
    configuration have taken less than ``budget_s`` in all (setup and collection not counted).
    """

    least: int
    most: int
    budget_s: float


@dataclass(frozen=True)
class Timing:
    """The wall times of one contender's runs, in seconds."""

    seconds: tuple[float, ...]

    @property
    def best(self) -> float:
        return min(self.seconds)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)


@dataclass(frozen=True)
class Outcome(Generic[T]):
    """Each contender's timing and the result of its first run (for checking)."""

    timings: dict[str, Timing]
    results: dict[str, T]


@contextmanager
def _frozen_heap() -> Iterator[None]:
    """Everything alive now (modules, inputs) is left out of collections meanwhile.

    The collection before each run then only walks what earlier runs left, instead of
    the whole heap of LangChain/LangGraph, which took longer than many of the runs.
    """
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def run_once(case: Case[T]) -> tuple[float, T]:
    """One timed run of ``case``; its setup, and a collection of what earlier runs left,
    are untimed."""
    thunk = case()
    gc.collect()
    gc.disable()
    try:
        start = time.thread_time_ns()
        result = thunk()
        elapsed = time.thread_time_ns() - start
    finally:
        gc.enable()
    return elapsed / 1e9, result


def interleaved(cases: Mapping[str, Case[T]], repeats: Repeats) -> Outcome[T]:
    """Time every case in rotated rounds; see :class:`Repeats` for how many."""
    names = list(cases)
    seconds: dict[str, list[float]] = {name: [] for name in names}
    results: dict[str, T] = {}
    spent = 0.0
    rounds = 0
    with _frozen_heap():
        while rounds < repeats.least or (rounds < repeats.most and spent < repeats.budget_s):
            shift = rounds % len(names)
            for name in names[shift:] + names[:shift]:
                elapsed, result = run_once(cases[name])
                seconds[name].append(elapsed)
                results.setdefault(name, result)
                spent += elapsed
                del result
            rounds += 1
    timings = {name: Timing(tuple(s)) for name, s in seconds.items()}
    return Outcome(timings, results)


def many_short(setups: Mapping[str, Case[object]], reps: int) -> dict[str, Timing]:
    """``reps`` separately timed runs of each short case, alternating between the cases,
    each run after its own untimed setup.

    The collector is off for the whole loop: a collection per run would take far
    longer than the runs.
    """
    seconds: dict[str, list[float]] = {name: [] for name in setups}
    with _frozen_heap():
        gc.collect()
        gc.disable()
        try:
            for _ in range(reps):
                for name, setup in setups.items():
                    thunk = setup()
                    start = time.thread_time_ns()
                    thunk()
                    seconds[name].append((time.thread_time_ns() - start) / 1e9)
        finally:
            gc.enable()
    return {name: Timing(tuple(s)) for name, s in seconds.items()}

"""The reducer comparison: ``apply_deltas`` against LangGraph's two message reducers.

Each contender folds the same deltas, one reducer call per batch, feeding each call's
output into the next as a channel does. A small workload is folded several times over
per timed run (each time from the initial state), so that no run is too short to time.

Two input variants: ``objects`` (messages built beforehand, untimed: LangChain objects
for LangGraph, our Structs for us, from the same dicts) and ``dicts`` (both sides get
the raw dicts and convert them inside the call).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Final

from langchain_core.messages import convert_to_messages
from langgraph.graph.message import _messages_delta_reducer, add_messages

from bench.common.checks import Check, lc_dump, same_state
from bench.common.inputs import Workload, batches
from bench.common.timing import Case, Repeats, interleaved, run_once
from threadfold import core

OURS: Final = "apply_deltas"
LG_DELTA: Final = "langgraph_delta"
LG_ADD: Final = "langgraph_add_messages"
CONTENDERS: Final = (OURS, LG_DELTA, LG_ADD)
VARIANTS: Final = ("objects", "dicts")

Reducer = Callable[[Any, Any], Any]


@dataclass(frozen=True)
class Sides:
    """One variant's inputs: what our side gets, and what LangGraph gets."""

    ours_initial: list[Any]
    ours_deltas: list[Any]
    lc_initial: list[Any]
    lc_deltas: list[Any]


@dataclass(frozen=True)
class ReducerRow:
    """One workload, variant and batch size: each contender's times, and the check."""

    workload: str
    variant: str
    batch: int
    deltas: int
    calls: int
    loops: int
    final_length: int
    best_s: dict[str, float]
    median_s: dict[str, float]
    rounds: int
    check: Check

    def rate(self, name: str) -> float:
        """Deltas per second, from the best run."""
        return self.deltas * self.loops / self.best_s[name]

    def speedup(self, name: str) -> float:
        """How many times faster ``apply_deltas`` was than ``name`` (best runs)."""
        return self.best_s[name] / self.best_s[OURS]

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["deltas_per_s"] = {name: self.rate(name) for name in self.best_s}
        data["speedup_vs"] = {name: self.speedup(name) for name in (LG_DELTA, LG_ADD)}
        return data


def sides(workload: Workload, variant: str) -> Sides:
    """Inputs for ``variant``; each side gets its own copy of the dicts."""
    if variant == "objects":
        return Sides(
            core.to_messages(workload.initial),
            core.to_messages(workload.deltas),
            convert_to_messages(workload.initial),
            convert_to_messages(workload.deltas),
        )
    return Sides(
        copy.deepcopy(workload.initial),
        copy.deepcopy(workload.deltas),
        copy.deepcopy(workload.initial),
        copy.deepcopy(workload.deltas),
    )


def inputs_check(workload: Workload, given: Sides) -> Check:
    """Both sides' prebuilt messages are the same logical messages."""
    name = f"{workload.name}: inputs equal"
    ours = core.dump_messages([*given.ours_initial, *given.ours_deltas])
    same = ours == lc_dump([*given.lc_initial, *given.lc_deltas])
    return Check(name, same, "" if same else "our Structs and LangChain's objects differ")


def _chain(reducer: Reducer, state: Sequence[Any], calls: list[Any], loops: int) -> Case[Any]:
    """A case that folds ``calls`` (each call's second argument) into ``state``, ``loops``
    times over."""

    def run() -> Any:
        current: Any = state
        for _ in range(loops):
            current = state
            for argument in calls:
                current = reducer(current, argument)
        return current

    return lambda: run


def cases(given: Sides, batch: int, loops: int) -> dict[str, Case[Any]]:
    """The three contenders on one variant's inputs, ``batch`` messages per call."""
    ours = batches(given.ours_deltas, batch)
    theirs = batches(given.lc_deltas, batch)
    return {
        OURS: _chain(core.apply_deltas, given.ours_initial, [[b] for b in ours], loops),
        LG_DELTA: _chain(_messages_delta_reducer, given.lc_initial, [[b] for b in theirs], loops),
        LG_ADD: _chain(add_messages, given.lc_initial, theirs, loops),
    }


def loops_for(given: Sides, batch: int, min_run_s: float) -> int:
    """How many folds per run make our (fastest) contender's run last ``min_run_s``.

    The calibration run doubles as a warm-up.
    """
    seconds, _ = run_once(cases(given, batch, 1)[OURS])
    return max(1, min(1_000, math.ceil(min_run_s / max(seconds, 1e-9))))


def measure(workload: Workload, variant: str, given: Sides, batch: int, *,
            repeats: Repeats, min_run_s: float) -> ReducerRow:
    """Time the three contenders on one configuration and check their final states."""
    loops = loops_for(given, batch, min_run_s)
    outcome = interleaved(cases(given, batch, loops), repeats)
    results = outcome.results
    label = f"{workload.name} / {variant} / batch {batch}"
    check = same_state(label, results[OURS], results[LG_DELTA], results[LG_ADD])
    timings = outcome.timings
    return ReducerRow(
        workload=workload.name,
        variant=variant,
        batch=batch,
        deltas=len(workload.deltas),
        calls=-(-len(workload.deltas) // batch),
        loops=loops,
        final_length=len(results[OURS]),
        best_s={name: t.best for name, t in timings.items()},
        median_s={name: t.median for name, t in timings.items()},
        rounds=len(timings[OURS].seconds),
        check=check,
    )


def run(workloads: Sequence[Workload], batch_sizes: Sequence[int], *, repeats: Repeats,
        min_run_s: float, progress: Callable[[str], None],
        ) -> tuple[list[ReducerRow], list[Check]]:
    """Every workload x variant x batch size; the input checks come back alongside."""
    rows: list[ReducerRow] = []
    checks: list[Check] = []
    for workload in workloads:
        for variant in VARIANTS:
            given = sides(workload, variant)
            if variant == "objects":
                checks.append(inputs_check(workload, given))
            for batch in batch_sizes:
                row = measure(workload, variant, given, batch, repeats=repeats,
                              min_run_s=min_run_s)
                rows.append(row)
                progress(f"{row.workload} / {variant} / batch {batch}: "
                         f"x{row.speedup(LG_DELTA):.1f} vs delta, {row.rounds} rounds")
    return rows, checks

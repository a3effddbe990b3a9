"""The results as markdown tables."""

from __future__ import annotations

from collections.abc import Sequence

from bench.common.tables import mark, rate, report, table, target_table
from bench.common.target import Target
from bench.core.folds import FoldRow, LengthCost
from bench.core.micro import OURS, Comparison
from bench.core.reducers import LG_ADD, LG_DELTA, ReducerRow
from bench.core.targets import REDUCER_SPEEDUP, floor_ratio, length_ratios


def reducer_table(rows: Sequence[ReducerRow]) -> list[str]:
    head = ["workload", "input", "batch", "calls", "runs x folds", "apply_deltas /s",
            "lg delta /s", "lg add_messages /s", "x delta", "x add", f">= {REDUCER_SPEEDUP:g}x",
            "result"]
    body = [
        [r.workload, r.variant, f"{r.batch:,}", f"{r.calls:,}", f"{r.rounds} x {r.loops}",
         rate(r.rate("apply_deltas")),
         rate(r.rate(LG_DELTA)), rate(r.rate(LG_ADD)), f"{r.speedup(LG_DELTA):.1f}",
         f"{r.speedup(LG_ADD):.1f}", mark(r.speedup(LG_DELTA) >= REDUCER_SPEEDUP),
         "equal" if r.check.ok else f"MISMATCH: {r.check.detail}"]
        for r in rows
    ]
    return table(head, body)


def fold_table(rows: Sequence[FoldRow]) -> list[str]:
    head = ["workload", "mode", "batch", "deltas", "deltas/s", "ns/delta", "rounds", "result"]
    body = [
        [r.workload, r.mode, f"{r.batch:,}", f"{r.deltas:,}", rate(r.rate),
         f"{r.ns_per_delta:.0f}",
         str(r.rounds), "equal" if r.check.ok else f"MISMATCH: {r.check.detail}"]
        for r in rows
    ]
    return table(head, body)


def length_table(rows: Sequence[FoldRow], costs: Sequence[LengthCost]) -> list[str]:
    head = ["measure", "thread length", "batch", "runs", "best ns/delta", "median ns/delta"]
    body = [[c.kind, f"{c.length:,}", str(c.batch), str(c.reps), f"{c.best_ns:.0f}",
             f"{c.median_ns:.0f}"] for c in costs]
    ratios = [f"{name}: x{ratio:.2f}" for name, ratio in length_ratios(rows, costs)]
    floor = floor_ratio(costs)
    if floor is not None:
        ratios.append(f"bare dict stores of the same updates: x{floor:.2f}")
    return [*table(head, body), "", "Long/short per-delta cost: " + "; ".join(ratios)]


def comparison_table(results: Sequence[Comparison]) -> list[str]:
    head = ["comparison", "contender", "ops/s", "ours faster by", "best ms/run", "rounds"]
    body: list[list[str]] = []
    for c in results:
        for name in c.best_s:
            label = f"{name} (baseline)" if name == c.baseline else name
            speedup = "" if name == OURS else f"x{c.speedup(name):.2f}"
            body.append([c.name, label, rate(c.rate(name)), speedup,
                         f"{c.best_s[name] * 1e3:.1f}", str(c.rounds)])
    return table(head, body)


def markdown(reducers: Sequence[ReducerRow], folds: Sequence[FoldRow],
             costs: Sequence[LengthCost], comparisons: Sequence[Comparison],
             targets: Sequence[Target]) -> str:
    sections = [
        ["## Targets", "", *target_table(targets)],
        ["## Reducers (deltas/s, best run)", "", *reducer_table(reducers)],
        ["## ThreadFold (apply + take_effect per batch; worker = ThreadFold(), "
         "tracked = bodies kept too)", "", *fold_table(folds)],
        ["## ThreadFold: per-delta cost by thread length", "",
         *length_table(folds, costs)],
        ["## Conversion and codec", "", *comparison_table(comparisons)],
    ]
    return report(sections)

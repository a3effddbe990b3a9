"""The performance targets, judged on one run's results.

A configuration whose result check failed never passes, whatever its speed.
"""

from __future__ import annotations

from collections.abc import Sequence

from bench.common.target import Target
from bench.core.folds import APPEND, FLOOR, WORKER, FoldRow, LengthCost
from bench.core.micro import Comparison
from bench.core.reducers import LG_DELTA, ReducerRow

REDUCER_SPEEDUP = 3.0
FOLD_RATE = 1_000_000.0
FOLD_LENGTH_RATIO = 1.5
CONVERSION_SPEEDUP = 5.0
CODEC_SPEEDUP = 5.0


def reducer(rows: Sequence[ReducerRow]) -> Target:
    """apply_deltas at least 3x LangGraph's delta reducer on every configuration."""
    worst = min(rows, key=lambda r: r.speedup(LG_DELTA))
    failing = [r for r in rows if r.speedup(LG_DELTA) < REDUCER_SPEEDUP or not r.check.ok]
    where = ", ".join(f"{r.workload}/{r.variant}/b{r.batch} x{r.speedup(LG_DELTA):.2f}"
                      for r in failing)
    return Target(
        "apply_deltas vs langgraph _messages_delta_reducer",
        f">= {REDUCER_SPEEDUP:g}x on every workload, input variant and batch size",
        f"min x{worst.speedup(LG_DELTA):.2f} ({worst.workload}, {worst.variant}, "
        f"batch {worst.batch})",
        not failing,
        f"below target or wrong: {where}" if failing else f"all {len(rows)} configurations",
    )


def fold_rate(all_rows: Sequence[FoldRow]) -> Target:
    """The workers' fold at a million deltas a second, appends and updates."""
    rows = [r for r in all_rows if r.mode == WORKER]
    worst = min(rows, key=lambda r: r.rate)
    failing = [r for r in rows if r.rate < FOLD_RATE or not r.check.ok]
    where = ", ".join(f"{r.workload}/b{r.batch} {r.rate / 1e6:.2f}M/s" for r in failing)
    return Target(
        "ThreadFold() deltas/s (worker mode; appends, updates; one core)",
        f">= {FOLD_RATE / 1e6:g}M/s",
        f"min {worst.rate / 1e6:.2f}M/s ({worst.workload}, batch {worst.batch})",
        not failing,
        f"below target or wrong: {where}" if failing else f"all {len(rows)} configurations",
    )


def length_ratios(rows: Sequence[FoldRow], costs: Sequence[LengthCost]) -> list[tuple[str, float]]:
    """Per-delta cost at the longest thread over the shortest: updates per batch, appends."""
    ratios: list[tuple[str, float]] = []
    updates = [r for r in rows if r.kind == "update" and r.mode == WORKER]
    for batch in sorted({r.batch for r in updates}):
        at = sorted((r for r in updates if r.batch == batch), key=lambda r: r.length)
        if len(at) > 1:
            ratios.append((f"update batch {batch}", at[-1].ns_per_delta / at[0].ns_per_delta))
    appended = sorted((c for c in costs if c.kind == APPEND), key=lambda c: c.length)
    if len(appended) > 1:
        short, long = appended[0], appended[-1]
        ratios.append((f"append batch {short.batch} (median)", long.median_ns / short.median_ns))
    return ratios


def floor_ratio(costs: Sequence[LengthCost]) -> float | None:
    """The same long/short ratio for bare dict stores of the update workload."""
    floors = sorted((c for c in costs if c.kind == FLOOR), key=lambda c: c.length)
    return floors[-1].best_ns / floors[0].best_ns if len(floors) > 1 else None


def fold_length(rows: Sequence[FoldRow], costs: Sequence[LengthCost]) -> Target:
    """Per-delta cost independent of thread length, within 1.5x."""
    ratios = length_ratios(rows, costs)
    lengths = sorted({c.length for c in costs})
    worst = max(ratios, key=lambda r: r[1])
    floor = floor_ratio(costs)
    context = "" if floor is None else f"; bare dict stores of the same updates: x{floor:.2f}"
    return Target(
        f"ThreadFold() per-delta cost, thread {lengths[-1]:,} vs {lengths[0]:,}",
        f"within {FOLD_LENGTH_RATIO:g}x",
        f"max x{worst[1]:.2f} ({worst[0]})",
        worst[1] <= FOLD_LENGTH_RATIO,
        ", ".join(f"{name} x{ratio:.2f}" for name, ratio in ratios) + context,
    )


def comparison(result: Comparison, goal: float) -> Target:
    """Ours against the comparison's baseline."""
    speedup = result.speedup(result.baseline)
    passed = speedup >= goal and result.check.ok
    return Target(
        f"{result.name}: ours vs {result.baseline}",
        f">= {goal:g}x",
        f"x{speedup:.2f}",
        passed,
        "" if result.check.ok else f"check failed: {result.check.detail}",
    )


def judge(reducers: Sequence[ReducerRow], folds: Sequence[FoldRow],
          costs: Sequence[LengthCost], conversion: Comparison, codec: Comparison) -> list[Target]:
    return [
        reducer(reducers),
        fold_rate(folds),
        fold_length(folds, costs),
        comparison(conversion, CONVERSION_SPEEDUP),
        comparison(codec, CODEC_SPEEDUP),
    ]

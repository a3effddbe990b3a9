"""Benchmark core's reducers, fold, conversion and codec against LangGraph / LangChain.

Run ``python -m bench.core [--quick] [--out PATH]``: prints a markdown report and
writes the results as JSON. Every timed configuration's result is checked against
LangGraph's (equal dumped states), so a fast wrong answer shows up as a MISMATCH, and
the exit status is 1.

Speed is only compared within one run (ratios), on a machine that may be shared.
"""

from __future__ import annotations

import hashlib
import platform
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

from bench.common import cli
from bench.common.checks import Check
from bench.common.inputs import Workload, appends, mix, updates
from bench.common.target import Target
from bench.common.timing import Repeats
from bench.core import folds, micro, reducers, report, targets
from bench.core.folds import FoldRow, LengthCost
from bench.core.micro import Comparison
from bench.core.reducers import ReducerRow
from threadfold import core

SEED = 20240601


@dataclass(frozen=True)
class Sizes:
    """Workload sizes and repeat policies of one mode."""

    append_lengths: tuple[int, ...]
    thread_length: int
    update_count: int
    mix_count: int
    batch_sizes: tuple[int, ...]
    min_run_s: float
    fold_deltas: int
    fold_lengths: tuple[int, ...]
    fold_reps: int
    convert_items: int
    codec_round_trips: int
    repeats: Repeats
    micro_repeats: Repeats


FULL = Sizes(
    append_lengths=(100, 1_000, 10_000), thread_length=1_000, update_count=20_000,
    mix_count=5_000, batch_sizes=(1, 100, 1_000), min_run_s=0.02, fold_deltas=50_000,
    fold_lengths=(100, 10_000), fold_reps=400, convert_items=2_000, codec_round_trips=5_000,
    repeats=Repeats(least=1, most=9, budget_s=3.0),
    micro_repeats=Repeats(least=5, most=15, budget_s=3.0),
)
QUICK = Sizes(
    append_lengths=(100, 1_000), thread_length=1_000, update_count=2_000, mix_count=2_000,
    batch_sizes=(1, 100, 1_000), min_run_s=0.01, fold_deltas=10_000,
    fold_lengths=(100, 10_000), fold_reps=100, convert_items=500, codec_round_trips=1_000,
    repeats=Repeats(least=1, most=5, budget_s=0.5),
    micro_repeats=Repeats(least=3, most=7, budget_s=0.5),
)


@dataclass(frozen=True)
class Results:
    """Everything one run measured and checked."""

    reducers: list[ReducerRow]
    folds: list[FoldRow]
    costs: list[LengthCost]
    comparisons: list[Comparison]
    checks: list[Check]
    targets: list[Target]

    @property
    def failed_checks(self) -> list[Check]:
        every = [*self.checks, *(r.check for r in self.reducers), *(f.check for f in self.folds),
                 *(c.check for c in self.comparisons)]
        return [c for c in every if not c.ok]


def workloads(sizes: Sizes) -> list[Workload]:
    length = sizes.thread_length
    return [
        *(appends(n, SEED) for n in sizes.append_lengths),
        updates(length, sizes.update_count, SEED),
        mix(length, sizes.mix_count, SEED),
    ]


def measure(sizes: Sizes, progress: Callable[[str], None]) -> Results:
    """Run every benchmark of ``sizes``."""
    rows, checks = reducers.run(workloads(sizes), sizes.batch_sizes, repeats=sizes.repeats,
                                min_run_s=sizes.min_run_s, progress=progress)
    fold_rows, costs = folds.run(sizes.fold_deltas, sizes.fold_lengths, sizes.batch_sizes,
                                 repeats=sizes.micro_repeats, reps=sizes.fold_reps, seed=SEED)
    progress("ThreadFold done")
    conversion = micro.conversion(sizes.convert_items, sizes.micro_repeats, SEED)
    codec = micro.codec(sizes.codec_round_trips, sizes.micro_repeats, SEED)
    progress("conversion and codec done")
    judged = targets.judge(rows, fold_rows, costs, conversion, codec)
    return Results(rows, fold_rows, costs, [conversion, codec], checks, judged)


def core_digest() -> str:
    """A digest of core's sources: core changes under the benchmark, so say which core."""
    digest = hashlib.sha256()
    for path in sorted(Path(core.__file__).parent.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def to_json(results: Results, mode: str, sizes: Sizes, seconds: float) -> dict[str, Any]:
    meta = {
        "core_sources_sha256": core_digest(),
        "mode": mode,
        "seconds": round(seconds, 1),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "versions": {p: version(p) for p in ("langgraph", "langchain-core", "msgspec")},
        "sizes": asdict(sizes),
        "timing": "thread CPU time; best (and median) of interleaved rounds; gc off while timed",
    }
    return {
        "meta": meta,
        "targets": [asdict(t) for t in results.targets],
        "reducers": [r.to_json() for r in results.reducers],
        "fold": [f.to_json() for f in results.folds],
        "fold_append_cost_by_length": [asdict(c) for c in results.costs],
        "comparisons": [c.to_json() for c in results.comparisons],
        "checks": [asdict(c) for c in results.checks],
        "failed_checks": [asdict(c) for c in results.failed_checks],
    }


def render(results: Results) -> str:
    return report.markdown(results.reducers, results.folds, results.costs,
                           results.comparisons, results.targets)


def main(argv: Sequence[str] | None = None) -> int:
    args = cli.parser("core", __doc__, "smaller sizes, under a minute").parse_args(argv)
    mode, sizes = cli.sizes(args, FULL, QUICK)
    started = time.perf_counter()
    results = measure(sizes, cli.progress(started))
    data = to_json(results, mode, sizes, time.perf_counter() - started)
    return cli.finish(cli.out_path("core", args), data, render(results), results.failed_checks)

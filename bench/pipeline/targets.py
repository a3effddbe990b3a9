"""The pipeline targets, judged on one run's results; a run whose check failed never passes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from statistics import median

from bench.common.target import Target
from bench.pipeline.commit_cost import UPDATES, CostRow
from bench.pipeline.e2e import E2EResult
from bench.pipeline.latency import LatencyResult
from bench.pipeline.memory import AI, HUMAN, MemoryRow
from bench.pipeline.naive import NaiveResult

E2E_RATE = 30_000.0
NAIVE_SPEEDUP = 30.0
LENGTH_RATIO = 1.5
P99_MS = 100.0
MEMORY_RATIO = 1.5


@dataclass(frozen=True)
class LengthRatio:
    """Long over short per-delta cost of one workload and batch size."""

    name: str
    cpu: float
    wall: float
    workload: str = ""


def _paired(long: list[float], short: list[float]) -> float:
    """Median over rounds of long/short: a round measures both close in time."""
    return median(x / y for x, y in zip(long, short, strict=True))


def length_ratios(rows: Sequence[CostRow]) -> list[LengthRatio]:
    """Per workload and batch size, long over short per-delta cost: (drainer + server)
    CPU and wall, each the median of the rounds' ratios."""
    out = []
    for workload in dict.fromkeys(r.workload for r in rows):
        for batch in sorted({r.batch_size for r in rows}):
            at = sorted((r for r in rows if r.workload == workload and r.batch_size == batch),
                        key=lambda r: r.length)
            if len(at) > 1:
                short, long = at[0], at[-1]
                out.append(LengthRatio(f"{workload} batch {batch}",
                                       _paired(long.cpu_us, short.cpu_us),
                                       _paired(long.wall_us, short.wall_us), workload))
    return out


def e2e_rate(headline: E2EResult) -> Target:
    c = headline.config
    return Target(
        "end to end sustained deltas/s",
        f">= {E2E_RATE:,.0f}/s",
        f"{headline.rate:,.0f}/s",
        headline.rate >= E2E_RATE and headline.check.ok,
        f"{c.threads:,} threads x {c.per_thread} deltas, bulks of {c.bulk} ({c.run} per thread), "
        f"{c.workers} workers x {c.concurrency}; est. {headline.capacity:,.0f}/s on 2 idle cores; "
        + (headline.check.detail or "states verified"),
    )


def speedup(headline: E2EResult, naive: NaiveResult) -> Target:
    ratio = headline.rate / naive.rate
    return Target(
        "threadfold vs naive (task per delta, lock, JSON, add_messages)",
        f">= {NAIVE_SPEEDUP:g}x",
        f"x{ratio:.1f}",
        ratio >= NAIVE_SPEEDUP and headline.check.ok,
        f"{headline.rate:,.0f}/s vs {naive.rate:,.1f}/s ({naive.deltas:,} deltas); naive check: "
        + ("ok" if naive.check.ok else naive.check.detail),
    )


def length(rows: Sequence[CostRow]) -> Target:
    """Judged where only the length differs (appends, updates of the last 100); uniform
    updates, whose batches touch more messages and pages in a long thread, are shown."""
    ratios = length_ratios(rows)
    judged = [r for r in ratios if r.workload != UPDATES]
    worst = max(judged, key=lambda r: r.cpu)
    uniform = [r for r in ratios if r not in judged]
    lengths = sorted({r.length for r in rows})
    return Target(
        f"commit cost per delta, thread {lengths[-1]:,} vs {lengths[0]:,}",
        f"within {LENGTH_RATIO:g}x (CPU: drainer + Redis; median of rounds)",
        f"max x{worst.cpu:.2f} ({worst.name})",
        worst.cpu <= LENGTH_RATIO,
        "; ".join(f"{r.name} cpu x{r.cpu:.2f} wall x{r.wall:.2f}" for r in judged)
        + "; not judged, uniform updates (a long thread's batch touches more pages): "
        + "; ".join(f"{r.name} cpu x{r.cpu:.2f}" for r in uniform),
    )


def latency(result: LatencyResult) -> Target:
    return Target(
        "enqueue-to-visible p99 at half the max rate",
        f"< {P99_MS:g} ms",
        f"{result.p99_ms:,.0f} ms",
        result.p99_ms < P99_MS and result.unresolved == 0 and result.check.ok,
        f"{result.achieved_rate:,.0f} deltas/s, {result.config.run} per thread per bulk as in "
        f"the end-to-end run; p50 {result.p50_ms:,.1f} ms, max "
        f"{result.max_ms:,.0f} ms; poll loop {result.mean_poll_ms:.1f} ms, record hand-over "
        f"p99 {result.handoff_p99_ms:.1f} ms (both counted in)",
    )


def memory(rows: Sequence[MemoryRow], variant: str) -> Target:
    mine = [r for r in rows if r.variant == variant]
    default = max((r for r in mine if r.config == "default"), key=lambda r: r.ratio)
    options = "; ".join(f"{r.per_thread}/thread: x{r.ratio:.2f} ({r.config})" for r in mine)
    return Target(
        f"Redis bytes per stored message / msgpack size ({variant})",
        f"within {MEMORY_RATIO:g}x",
        f"x{default.ratio:.2f} (default, {default.per_thread}/thread)",
        default.ratio <= MEMORY_RATIO,
        options,
    )


def judge(headline: E2EResult, naive: NaiveResult, costs: Sequence[CostRow],
          lat: LatencyResult, mem: Sequence[MemoryRow]) -> list[Target]:
    return [e2e_rate(headline), speedup(headline, naive), length(costs), latency(lat),
            memory(mem, AI), memory(mem, HUMAN)]

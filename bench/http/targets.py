"""The HTTP targets, judged on one run's summaries; a run whose check failed never passes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bench.common.target import Target
from bench.http.runs import PacedRun
from bench.http.summary import BULK, POST, STATE, Summary

POST_RPS = 3000.0
PACED_RATE = 3000.0
PACED_P99_MS = 50.0
#: Issue 24's paced point: one-message POSTs at 5,000/s, p99 under 20 ms.
PACED_RATE_R2 = 5000.0
PACED_P99_MS_R2 = 20.0
#: The paced runs judged: (label, p99 bound in ms); the rates are main.Sizes'. A label
#: names the run's threads too (no space: a thread id has none).
PACED_TARGETS = (("target", PACED_P99_MS), ("issue-24", PACED_P99_MS_R2))
STATE_RPS = 3000.0
BULK_DELTAS = 30_000.0
#: A paced run "held the rate" if it answered this share of the schedule's rate.
RATE_SHARE = 0.97


def ms(value: float | None) -> str:
    """A latency in milliseconds, or "unanswered" (a percentile that reached requests left
    without an answer)."""
    return "unanswered" if value is None else f"{value:,.1f}"


def _per_variant(summaries: Sequence[Summary], scenario: str, value: Any, goal: float,
                 unit: str) -> tuple[bool, str, str]:
    mine = [s for s in summaries if s.scenario == scenario]
    if not mine:
        return False, "not measured", ""
    passing = [s.variant for s in mine if value(s) >= goal and s.ok]
    best = max(mine, key=value)
    detail = "; ".join(f"{s.variant} {value(s):,.0f}{unit} (x{s.rps_vs_healthz:.2f} healthz)"
                       + ("" if s.ok else " CHECK FAILED") for s in mine)
    verdict = f"passes on {', '.join(passing)}" if passing else "no configuration passes"
    return bool(passing), f"{value(best):,.0f}{unit} ({best.variant})", f"{verdict}. {detail}"


def judge(summaries: Sequence[Summary], paced: Sequence[PacedRun]) -> list[Target]:
    targets = []
    ok, value, detail = _per_variant(summaries, POST, lambda s: s.rps, POST_RPS, "/s")
    targets.append(Target("POST /threads/{id}/deltas max req/s (wrk, 10k ids)",
                          f">= {POST_RPS:,.0f}/s (best config)", value, ok, detail))
    for label, bound in PACED_TARGETS:
        at_rate = [p for p in paced if p.label == label]
        if at_rate:
            targets.append(_paced_target(at_rate, bound))
    ok, value, detail = _per_variant(summaries, STATE, lambda s: s.rps, STATE_RPS, "/s")
    targets.append(Target("GET /threads/{id}/state (100 messages) req/s",
                          f">= {STATE_RPS:,.0f}/s (best config)", value, ok, detail))
    ok, value, detail = _per_variant(summaries, BULK, lambda s: s.deltas_per_s, BULK_DELTAS,
                                     " deltas/s")
    targets.append(Target("POST /deltas bulk ingest", f">= {BULK_DELTAS:,.0f} deltas/s",
                          value, ok, detail))
    return targets


def _paced_target(at_rate: Sequence[PacedRun], bound: float) -> Target:
    """The paced runs of one rate, judged: every configuration that held it."""
    held = [p for p in at_rate if _held(p, bound)]
    best = min(at_rate, key=lambda p: p.result.latency("p99") or float("inf"))
    detail = "; ".join(
        f"{p.variant.name}: {p.result.achieved_rate:,.0f}/s answered, p50 "
        f"{ms(p.result.latency('p50'))} p99 {ms(p.result.latency('p99'))} ms, "
        f"{p.errors} errors, {p.result.scheduled - p.result.completed} unanswered"
        for p in at_rate)
    verdict = (f"passes on {', '.join(p.variant.name for p in held)}" if held
               else "no configuration holds the rate")
    return Target(f"POST p99 at {at_rate[0].rate:,.0f} req/s (paced, open loop)",
                  f"< {bound:g} ms at >= {RATE_SHARE:.0%} of the rate",
                  f"{ms(best.result.latency('p99'))} ms ({best.variant.name})", bool(held),
                  f"{verdict}. {detail}")


def _held(p: PacedRun, bound: float) -> bool:
    p99 = p.result.latency("p99")
    return (p99 is not None and p99 < bound and p.errors == 0
            and p.result.completed == p.result.scheduled
            and p.result.achieved_rate >= RATE_SHARE * p.rate and p.check.ok)

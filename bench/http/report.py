"""Medians over rounds, the targets, and the markdown tables of the HTTP benchmark."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bench.common.tables import rate, report, table, target_table
from bench.common.target import Target
from bench.http.profile import Profile
from bench.http.runs import PacedRun, Run

POST_RPS = 3000.0
PACED_RATE = 3000.0
PACED_P99_MS = 50.0
STATE_RPS = 3000.0
BULK_DELTAS = 30_000.0
#: A paced run "held the rate" if it answered this share of the schedule's rate.
RATE_SHARE = 0.97

HEALTHZ = "healthz"
POST = "post-10k"
STATE = "state"
BULK = "bulk"


def _median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else 0.0


@dataclass(frozen=True)
class Summary:
    """One scenario on one configuration, medians over its rounds."""

    scenario: str
    variant: str
    runs: tuple[Run, ...]
    healthz: tuple[Run, ...]

    def median(self, key: Any) -> float:
        return _median([float(key(r)) for r in self.runs])

    @property
    def rps(self) -> float:
        return self.median(lambda r: r.rps)

    @property
    def rps_range(self) -> tuple[float, float]:
        values = [r.rps for r in self.runs]
        return min(values), max(values)

    @property
    def deltas_per_s(self) -> float:
        return self.median(lambda r: r.deltas_per_s)

    @property
    def bulk(self) -> bool:
        return self.runs[0].scenario.per_request > 1

    def _paired(self, key: Any) -> float:
        """Median over rounds of this run's ``key`` over healthz's in the same round."""
        by_round = {h.round: h for h in self.healthz}
        ratios = [key(r) / key(by_round[r.round]) for r in self.runs
                  if r.round in by_round and key(by_round[r.round])]
        return _median(ratios)

    @property
    def rps_vs_healthz(self) -> float:
        """Requests/s over healthz's; for bulk, deltas/s over healthz's requests/s."""
        if self.bulk:
            return self._paired(lambda r: r.deltas_per_s if r.scenario.per_request > 1
                                else r.rps)
        return self._paired(lambda r: r.rps)

    @property
    def cpu_vs_healthz(self) -> float:
        """API CPU per request over healthz's; for bulk, per delta."""
        if self.bulk:
            return self._paired(lambda r: r.api_us / r.scenario.per_request)
        return self._paired(lambda r: r.api_us)

    @property
    def ok(self) -> bool:
        return all(r.check.ok for r in self.runs)

    @property
    def failed(self) -> list[str]:
        return [f"{r.check.name}: {r.check.detail}" for r in self.runs if not r.check.ok]

    def to_json(self) -> dict[str, Any]:
        lo, hi = self.rps_range
        return {
            "scenario": self.scenario, "variant": self.variant, "rounds": len(self.runs),
            "rps_median": self.rps, "rps_min": lo, "rps_max": hi,
            "deltas_per_s_median": self.deltas_per_s,
            "rps_vs_healthz": self.rps_vs_healthz, "api_cpu_vs_healthz": self.cpu_vs_healthz,
            "p50_ms_median": self.median(lambda r: r.wrk.p50_ms),
            "p99_ms_median": self.median(lambda r: r.wrk.p99_ms),
            "api_cpu_us_per_request_median": self.median(lambda r: r.api_us),
            "api_cpu_kernel_share_median": self.median(lambda r: r.api_sys_share),
            "all_sides_cpu_us_per_request_median": self.median(lambda r: r.all_us),
            "estimate_rps_two_idle_cores_median": self.median(lambda r: r.idle_estimate),
            "redis_cpu_us_per_request_median": self.median(lambda r: r.redis_us),
            "worker_cpu_us_per_delta_median": self.median(lambda r: r.worker_us_per_delta),
            "wrk_cpu_us_per_request_median": self.median(lambda r: r.wrk_us),
            "wrk_core_share_median": self.median(lambda r: r.wrk.cpu_share),
            "other_processes_cores_median": self.median(lambda r: r.others_cores),
            "backlog_deltas_median": self.median(lambda r: r.drain.deltas if r.drain else 0),
            "drain_seconds_median": self.median(lambda r: r.drain.seconds if r.drain else 0),
            "kept_up": [r.kept_up for r in self.runs],
            "verified": self.ok,
        }


def summarize(runs: Sequence[Run]) -> list[Summary]:
    keys = list(dict.fromkeys((r.scenario.name, r.variant.name) for r in runs))
    out = []
    for scenario, variant in keys:
        mine = tuple(r for r in runs if r.scenario.name == scenario and r.variant.name == variant)
        healthz = tuple(r for r in runs if r.scenario.name == HEALTHZ
                        and r.variant.name == variant)
        out.append(Summary(scenario, variant, mine, healthz))
    return out


# -- targets ---------------------------------------------------------------------------------


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
    at_rate = [p for p in paced if p.label == "target"]
    if at_rate:
        held = [p for p in at_rate if _held(p)]
        best = min(at_rate, key=lambda p: p.result.latency("p99") or float("inf"))
        shown = _ms(best.result.latency("p99"))
        detail = "; ".join(
            f"{p.variant.name}: {p.result.achieved_rate:,.0f}/s answered, p50 "
            f"{_ms(p.result.latency('p50'))} p99 {_ms(p.result.latency('p99'))} ms, "
            f"{p.errors} errors, {p.result.scheduled - p.result.completed} unanswered"
            for p in at_rate)
        verdict = (f"passes on {', '.join(p.variant.name for p in held)}" if held
                   else "no configuration holds the rate")
        targets.append(Target(f"POST p99 at {at_rate[0].rate:,.0f} req/s (paced, open loop)",
                              f"< {PACED_P99_MS:g} ms at >= {RATE_SHARE:.0%} of the rate",
                              f"{shown} ms ({best.variant.name})", bool(held),
                              f"{verdict}. {detail}"))
    ok, value, detail = _per_variant(summaries, STATE, lambda s: s.rps, STATE_RPS, "/s")
    targets.append(Target("GET /threads/{id}/state (100 messages) req/s",
                          f">= {STATE_RPS:,.0f}/s (best config)", value, ok, detail))
    ok, value, detail = _per_variant(summaries, BULK, lambda s: s.deltas_per_s, BULK_DELTAS,
                                     " deltas/s")
    targets.append(Target("POST /deltas bulk ingest", f">= {BULK_DELTAS:,.0f} deltas/s",
                          value, ok, detail))
    return targets


def _held(p: PacedRun) -> bool:
    p99 = p.result.latency("p99")
    return (p99 is not None and p99 < PACED_P99_MS and p.errors == 0
            and p.result.completed == p.result.scheduled
            and p.result.achieved_rate >= RATE_SHARE * p.rate and p.check.ok)


# -- tables ----------------------------------------------------------------------------------


def _ms(value: float | None) -> str:
    return "unanswered" if value is None else f"{value:,.1f}"


def _kept(s: Summary) -> str:
    flags = [k for k in (r.kept_up for r in s.runs) if k is not None]
    if not flags:
        return "-"
    return "yes" if all(flags) else f"no ({flags.count(False)}/{len(flags)})"


def throughput_table(summaries: Sequence[Summary]) -> list[str]:
    """One row per scenario and configuration; bulk CPU columns are per delta ("/d")."""
    head = ["scenario", "config", "conns", "req/s median (min-max)", "deltas/s", "x healthz",
            "p50 ms", "p99 ms", "API CPU us/req (kernel)", "x healthz CPU", "Redis us/req",
            "workers us/delta", "wrk us/req (core)", "all CPU us/req", "est. req/s 2 idle cores",
            "others' cores", "backlog at end", "drain s", "kept up", "state"]
    rows = []
    for s in summaries:
        lo, hi = s.rps_range
        conns = s.runs[0].wrk.connections
        writes = s.runs[0].scenario.writes
        per = s.runs[0].scenario.per_request

        def us(value: float, per: int = per) -> str:
            return f"{value / per:.0f}/d" if per > 1 else f"{value:.0f}"

        estimate = s.median(lambda r: r.idle_estimate)
        rows.append([
            s.scenario, s.variant, str(conns), f"{rate(s.rps)} ({rate(lo)}-{rate(hi)})",
            rate(s.deltas_per_s) if writes else "-", f"{s.rps_vs_healthz:.2f}",
            f"{s.median(lambda r: r.wrk.p50_ms):.1f}", f"{s.median(lambda r: r.wrk.p99_ms):.1f}",
            f"{us(s.median(lambda r: r.api_us))} ({s.median(lambda r: r.api_sys_share):.0%})",
            f"{s.cpu_vs_healthz:.1f}",
            us(s.median(lambda r: r.redis_us)),
            f"{s.median(lambda r: r.worker_us_per_delta):.0f}" if writes else "-",
            f"{us(s.median(lambda r: r.wrk_us))} ({s.median(lambda r: r.wrk.cpu_share):.0%})",
            us(s.median(lambda r: r.all_us)),
            f"{rate(estimate * per)} deltas/s" if per > 1 else rate(estimate),
            f"{s.median(lambda r: r.others_cores):.2f}",
            f"{s.median(lambda r: r.drain.deltas if r.drain else 0):,.0f}" if writes else "-",
            f"{s.median(lambda r: r.drain.seconds if r.drain else 0):.1f}" if writes else "-",
            _kept(s), "verified" if s.ok else "WRONG",
        ])
    return table(head, rows)


def paced_table(paced: Sequence[PacedRun]) -> list[str]:
    head = ["config", "schedule", "rate", "answered/s", "p50 ms", "p90 ms", "p99 ms", "max ms",
            "answered: p99 / service p99 ms", "errors / unanswered", "max send lag ms",
            "generator core", "API CPU us/req", "others' cores", "backlog at end", "drain s",
            "state"]
    rows = []
    for p in paced:
        r = p.result
        rows.append([
            p.variant.name, p.label, f"{p.rate:,.0f}/s", f"{r.achieved_rate:,.0f}",
            _ms(r.latency("p50")), _ms(r.latency("p90")), _ms(r.latency("p99")),
            _ms(r.latency("max")),
            f"{_ms(r.answered('latency', 'p99'))} / {_ms(r.answered('service', 'p99'))}",
            f"{p.errors} / {r.scheduled - r.completed}", f"{float(r.raw['max_send_lag_ms']):,.1f}",
            f"{r.cpu_share:.0%}", f"{p.api_us:.0f}", f"{p.others_cores:.2f}",
            f"{p.drain.deltas:,}",
            f"{p.drain.seconds:.1f}", "verified" if p.check.ok else f"WRONG: {p.check.detail}",
        ])
    return table(head, rows)


def profile_tables(profiles: Sequence[Profile]) -> list[str]:
    lines: list[str] = []
    for prof in profiles:
        if prof.error or not prof.samples:
            lines += [f"**{prof.what}**: no profile ({prof.error or 'no samples'})", ""]
            continue
        mode = "native + Python frames" if prof.native else "Python frames only"
        lines += [f"**{prof.what}**: {prof.samples:,} samples of threads holding the GIL "
                  f"({prof.rate} Hz for {prof.seconds:g} s, {mode})", ""]
        lines += table(["where (first known frame from the leaf up)", "share"],
                        [[g, f"{prof.share(n):.1%}"] for g, n in prof.groups])
        lines += ["", "Threads (share of samples; share of the time holding the GIL): "
                  + "; ".join(f"{t} {prof.share(n):.0%}; {prof.busy(n):.0%}"
                              for t, n in prof.threads), ""]
        lines += table(["hottest frame (innermost file:line or native symbol)", "share"],
                        [[f.replace("|", "/"), f"{prof.share(n):.1%}"] for f, n in prof.leaves])
        lines.append("")
    return lines


def markdown(targets: Sequence[Target], summaries: Sequence[Summary], *,
             paced: Sequence[PacedRun], profiles: Sequence[Profile], notes: Sequence[str],
             checks: Sequence[str]) -> str:
    sections = [["## Targets", "", *target_table(targets)]]
    if summaries:
        sections.append(["## Max throughput (wrk, closed loop; medians over rounds)", "",
                         *throughput_table(summaries)])
    if paced:
        sections.append(["## Fixed-rate POST latency (paced open-loop generator, "
                         "latency from the scheduled send)", "", *paced_table(paced)])
    if profiles:
        sections.append(["## Where the API process spends its time (py-spy)", "",
                         *profile_tables(profiles)])
    if checks:
        sections.append(["## Checks", "", *(f"- {c}" for c in checks)])
    sections.append(["## Notes", "", *(f"- {n}" for n in notes)])
    return report(sections)

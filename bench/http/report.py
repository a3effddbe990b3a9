"""The markdown tables of the HTTP benchmark."""

from __future__ import annotations

from collections.abc import Sequence

from bench.common.tables import rate, report, table, target_table
from bench.common.target import Target
from bench.http.profile import Profile
from bench.http.runs import PacedRun
from bench.http.summary import Summary
from bench.http.targets import ms


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
            ms(r.latency("p50")), ms(r.latency("p90")), ms(r.latency("p99")),
            ms(r.latency("max")),
            f"{ms(r.answered('latency', 'p99'))} / {ms(r.answered('service', 'p99'))}",
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

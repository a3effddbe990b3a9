"""Benchmark the HTTP API under load: wrk against the real service, workers draining.

Run ``python -m bench.http [--quick] [--out PATH]``: prints a markdown report and
writes the results as JSON. In one run, on this machine: a private state Redis and
broker Redis, Celery workers and beat, and the API twice (``THREADFOLD_API_WORKERS``
1 and 2) side by side; then, in interleaved rounds (configurations rotated each round,
medians reported) with wrk (``apt-get install wrk``):

1. ``GET /healthz``: the framework's trivial endpoint, the reference;
2. ``POST /threads/{id}/deltas``, one message, over 10,000 thread ids and over 100;
3. ``GET /threads/{id}/state`` of 100-message threads (filled and drained first);
4. ``POST /deltas``, 500 one-message deltas over many threads per request.

wrk cannot pace (it is closed-loop), so it gives the most requests per second; latency at
a fixed rate comes from a paced open-loop generator (``bench.http.paced``) at 3,000
requests/s, at 5,000 (issue 24's point) and at half the measured maximum. Every write
run is drained by the workers and checked (backlog left when the load stopped, time to
drain, deltas applied). A
py-spy profile shows where an API process spends its time under the POST load.

The machine has two cores shared by the server, Redis, the workers and the load
generator: each run reports the CPU every side spent per request (psutil's process times and
``INFO cpu``), wrk's own share of a core, and a pinned configuration gives one API
process core 0 to itself (everything else on core 1).
"""

from __future__ import annotations

import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.common import cli, stack
from bench.common.checks import Check
from bench.common.machine import load_average, program_version
from bench.common.target import Target
from bench.http import report, summary, targets
from bench.http.profile import Profile, profile_during
from bench.http.runs import (
    VARIANTS,
    PacedRun,
    Run,
    Scenario,
    prefill_state,
    run_paced_post,
    run_scenario,
)
from bench.http.wrk import INSTALL_HINT, WrkMissingError, require_wrk, run_wrk, write_scripts

Progress = Callable[[str], None]
STATE_PREFIX = "state-"


@dataclass(frozen=True)
class Sizes:
    """One run's sizes. ``seconds`` are whole seconds (wrk's ``-d`` drops fractions)."""

    rounds: int
    seconds: int
    bulk_seconds: int
    variants: tuple[str, ...]
    post_ids: int = 10_000
    hot_ids: int = 100
    state_threads: int = 64
    state_messages: int = 100
    bulk_threads: int = 5_000
    bulk_per_request: int = 500
    bulk_bodies: int = 10
    connections: int = 32
    bulk_connections: int = 4
    paced_seconds: float = 6.0
    paced_half_max: bool = True
    paced_connections: int = 64
    paced_grace: float = 3.0
    paced_rate: float = targets.PACED_RATE
    #: Issue 24's paced point, run after the first (None: not run)
    paced_rate_r2: float | None = targets.PACED_RATE_R2
    warmup_seconds: int = 1
    profile_seconds: int = 5
    celery_workers: int = 2
    api_workers: tuple[int, ...] = (1, 2)
    use_wrk: bool = True


FULL = Sizes(rounds=3, seconds=3, bulk_seconds=2, variants=("api1", "api2", "api1-pinned"))
QUICK = Sizes(rounds=1, seconds=1, bulk_seconds=1, variants=("api1", "api2"),
              state_threads=16, paced_seconds=2.0, paced_half_max=False, paced_grace=1.0,
              profile_seconds=0, paced_rate_r2=None)


def scenarios(sizes: Sizes) -> list[Scenario]:
    c = sizes.connections
    return [
        Scenario(summary.HEALTHZ, "healthz", c),
        Scenario(summary.POST, "post_one", c, ids=sizes.post_ids),
        Scenario("post-100", "post_one", c, ids=sizes.hot_ids),
        Scenario(summary.STATE, "get_state", c, ids=sizes.state_threads, prefix=STATE_PREFIX),
        Scenario(summary.BULK, "post_bulk", sizes.bulk_connections, ids=sizes.bulk_threads,
                 per_request=sizes.bulk_per_request, bodies=sizes.bulk_bodies),
    ]


@dataclass
class Results:
    """Everything one run measured and checked."""

    runs: list[Run]
    paced: list[PacedRun]
    profiles: list[Profile]
    prefill: Check
    targets: list[Target]
    notes: list[str]

    @property
    def summaries(self) -> list[summary.Summary]:
        return summary.summarize(self.runs)

    @property
    def checks(self) -> list[Check]:
        return [self.prefill, *(r.check for r in self.runs), *(p.check for p in self.paced)]

    @property
    def failed_checks(self) -> list[Check]:
        return [c for c in self.checks if not c.ok]


def _warm_up(line: stack.Stack, scripts: dict[str, Path], sizes: Sizes,
             progress: Progress) -> None:
    """Every API process: scripts cached in Redis, Celery connections open, code paths hot
    (a second of single POSTs and of state reads each; bulk shares the POST path)."""
    for api in line.apis.values():
        for scenario in scenarios(sizes):
            if scenario.script in ("post_one", "get_state"):
                run_wrk(api.url + scenario.path(), script=scripts[scenario.script],
                        args=scenario.args(f"warm-{api.name}-{scenario.name}-", 1),
                        seconds=sizes.warmup_seconds, connections=scenario.connections)
    line.wait_drained(300)
    progress("warmed up every API")


def _rounds(line: stack.Stack, scripts: dict[str, Path], sizes: Sizes,
            progress: Progress) -> list[Run]:
    variants = [VARIANTS[v] for v in sizes.variants]
    runs: list[Run] = []
    for rnd in range(sizes.rounds):
        order = variants[rnd % len(variants):] + variants[: rnd % len(variants)]
        for variant in order:
            for scenario in scenarios(sizes):
                seconds = sizes.bulk_seconds if scenario.name == summary.BULK else sizes.seconds
                run = run_scenario(line, scripts, scenario, variant, rnd=rnd, seconds=seconds)
                runs.append(run)
                drained = (f", backlog {run.drain.deltas:,} drained in {run.drain.seconds:.1f}s"
                           if run.drain else "")
                progress(f"r{rnd} {variant.name} {scenario.name}: {run.rps:,.0f} req/s, "
                         f"p99 {run.wrk.p99_ms:.1f} ms{drained}"
                         + ("" if run.check.ok else f" CHECK FAILED {run.check.detail}"))
    return runs


def _paced(line: stack.Stack, sizes: Sizes, runs: Sequence[Run],
           progress: Progress) -> list[PacedRun]:
    out = []
    summaries = {(s.scenario, s.variant): s for s in summary.summarize(runs)}
    for name in sizes.variants:
        variant = VARIANTS[name]
        plan = [("target", sizes.paced_rate)]
        if sizes.paced_rate_r2 is not None:
            plan.append(("issue-24", sizes.paced_rate_r2))
        post = summaries.get((summary.POST, name))
        if sizes.paced_half_max and post is not None:
            plan.append(("half-max", round(post.rps / 2)))
        for label, rate in plan:
            paced = run_paced_post(line, variant, label=label, rate=rate,
                                   seconds=sizes.paced_seconds, ids=sizes.post_ids,
                                   connections=sizes.paced_connections, grace=sizes.paced_grace)
            out.append(paced)
            p99 = paced.result.latency("p99")
            progress(f"paced {name} {label} {rate:,.0f}/s: answered "
                     f"{paced.result.achieved_rate:,.0f}/s, p99 "
                     f"{'unanswered' if p99 is None else f'{p99:.1f} ms'}")
    return out


def _profiles(line: stack.Stack, scripts: dict[str, Path], sizes: Sizes, workdir: Path,
              progress: Progress) -> list[Profile]:
    """api1 under the wrk POST load (10k ids), the state reads and the bulk load."""
    api = line.apis.get("api1")
    if api is None or not sizes.profile_seconds:
        return []
    out = []
    for scenario in scenarios(sizes):
        if scenario.name not in (summary.POST, summary.STATE, summary.BULK):
            continue

        def load(seconds: float, scenario: Scenario = scenario) -> object:
            return run_wrk(api.url + scenario.path(), script=scripts[scenario.script],
                           args=scenario.args(f"prof-{scenario.name}-", 1),
                           seconds=round(seconds), connections=scenario.connections)

        what = f"api1 (1 uvicorn process) under wrk {scenario.name}, c={scenario.connections}"
        prof = profile_during(api.process.pid, sizes.profile_seconds,
                              workdir / f"pyspy-{scenario.name}.txt", load, what)
        out.append(prof)
        line.wait_drained(300)
        progress(f"profiled {scenario.name}: {prof.samples} samples {prof.error}")
    return out


def _notes(sizes: Sizes, load_before: str, workdir_kept: Path | None) -> list[str]:
    cores = os.cpu_count()
    notes = [
        f"Machine: {cores} cores shared by everything below; load average (1, 5, 15 min) "
        f"before {load_before}, after {load_average()}; "
        f"{program_version(['redis-server', '--version'])}; {program_version(['wrk', '-v'])}.",
        f"Service: state Redis + broker Redis, {sizes.celery_workers} Celery workers "
        "(prefork, concurrency 1) + beat, deployment defaults (batch_size 1000, "
        "refs_per_task 256); APIs `api1` (THREADFOLD_API_WORKERS=1) and `api2` (=2) on "
        "one Redis, uvicorn + uvloop + httptools.",
        "`api1-pinned`: the api1 process on core 0 alone; Redis, workers, beat, the "
        "benchmark and the load generator on core 1 (sched_setaffinity on every thread, "
        "`taskset -c 1 wrk`).",
        f"wrk: closed loop, 1 thread, {sizes.connections} connections ({sizes.bulk_connections}"
        f" for bulk), {sizes.seconds} s per run ({sizes.bulk_seconds} s bulk), "
        f"{sizes.rounds} rounds with the configurations rotated; 'x healthz' is the median "
        "over rounds of the ratio to healthz on the same configuration in the same round.",
        "CPU columns are CPU time spent during the run divided by requests answered: API "
        "= the API's process tree (its kernel share, mostly socket syscalls, in brackets); "
        "Redis = state + broker servers (including the commands of the workers' drains); "
        "workers = Celery "
        "workers during the run and the drain after it, per accepted delta; wrk = the load "
        "generator's own CPU (its share of one core in brackets); \"others' cores\" = CPU "
        "that processes not ours used meanwhile (machine busy time from /proc/stat minus "
        "ours), in cores: the machine is shared. 'all CPU us/req' adds API, Redis, workers "
        "(per request) and wrk; 'est. req/s 2 idle cores' = 2e6 / that, a CPU-bound "
        "estimate, not a measurement. Bulk rows give CPU per delta ('/d'), their 'x "
        "healthz' is deltas/s over healthz's requests/s and 'x healthz CPU' API CPU per "
        "delta over healthz's per request.",
        f"Paced: an open-loop asyncio generator (raw sockets on uvloop, "
        f"{sizes.paced_connections} keep-alive connections) POSTs one message per request "
        f"over {sizes.post_ids:,} ids for {sizes.paced_seconds:g} s at the rate shown; "
        "latency is from each request's scheduled send time (queueing in the generator "
        "counts), 'service' from its actual send; requests unanswered "
        f"{sizes.paced_grace:g} s after the schedule ended count as unanswered (and "
        "make the percentiles that reach them 'unanswered'); 'answered:' columns are over "
        "the answered requests only.",
        "'backlog at end': deltas not yet applied by the workers when the load stopped; "
        "'drain s': from the end of the load until no thread had a backlog; 'kept up': "
        "the backlog at the end was at most one second of the run's input.",
        f"Bulk: {sizes.bulk_per_request} one-message deltas per request, each to a "
        f"different thread of {sizes.bulk_threads:,}; state: {sizes.state_threads} threads "
        f"of {sizes.state_messages} messages, read round-robin (whole thread per request).",
    ]
    if workdir_kept is not None:
        notes.append(f"Logs and py-spy raw profiles kept in {workdir_kept}.")
    return notes


def measure(sizes: Sizes, progress: Progress, keep: bool = False) -> Results:
    """Start the service and run every part of ``sizes``."""
    if sizes.use_wrk:
        require_wrk()
    load_before = load_average()
    workdir = Path(tempfile.mkdtemp(prefix="threadfold-http-bench-"))
    try:
        with stack.running(sizes.api_workers, sizes.celery_workers, workdir) as line:
            progress(f"services up: {', '.join(line.apis)}, {sizes.celery_workers} workers")
            first = next(iter(line.apis))
            prefill = prefill_state(line, first, prefix=STATE_PREFIX,
                                    threads=sizes.state_threads, messages=sizes.state_messages)
            progress(f"prefill: {prefill.name} {'ok' if prefill.ok else prefill.detail}")
            runs: list[Run] = []
            profiles: list[Profile] = []
            if sizes.use_wrk:
                scripts = write_scripts(workdir)
                _warm_up(line, scripts, sizes, progress)
                runs = _rounds(line, scripts, sizes, progress)
            paced = _paced(line, sizes, runs, progress)
            if sizes.use_wrk:
                profiles = _profiles(line, scripts, sizes, workdir, progress)
    finally:
        if not keep:
            import shutil  # noqa: PLC0415

            shutil.rmtree(workdir, ignore_errors=True)
    judged = targets.judge(summary.summarize(runs), paced)
    notes = _notes(sizes, load_before, workdir if keep else None)
    return Results(runs, paced, profiles, prefill, judged, notes)


def to_json(results: Results, mode: str, sizes: Sizes, seconds: float) -> dict[str, Any]:
    meta = {"mode": mode, "seconds": round(seconds, 1), "python": sys.version.split()[0],
            "platform": platform.platform(), "cores": os.cpu_count(), "sizes": asdict(sizes)}
    return {
        "meta": meta,
        "notes": results.notes,
        "targets": [asdict(t) for t in results.targets],
        "summaries": [s.to_json() for s in results.summaries],
        "paced": [p.to_json() for p in results.paced],
        "profiles": [p.to_json() for p in results.profiles],
        "runs": [r.to_json() for r in results.runs],
        "checks": [asdict(c) for c in results.checks],
        "failed_checks": [asdict(c) for c in results.failed_checks],
    }


def render(results: Results) -> str:
    checks = [f"{c.name}: {'ok' if c.ok else 'FAILED ' + c.detail}"
              for c in [results.prefill, *(c for c in results.failed_checks
                                           if c is not results.prefill)]]
    checks.append(f"{sum(c.ok for c in results.checks)} of {len(results.checks)} checks "
                  "passed (every write run drained and verified)")
    return report.markdown(results.targets, results.summaries, paced=results.paced,
                           profiles=results.profiles, notes=results.notes, checks=checks)


def main(argv: Sequence[str] | None = None) -> int:
    parser = cli.parser("http", __doc__, "small sizes, under a minute")
    parser.add_argument("--keep", action="store_true", help="keep logs and raw profiles")
    args = parser.parse_args(argv)
    mode, sizes = cli.sizes(args, FULL, QUICK)
    started = time.perf_counter()
    try:
        results = measure(sizes, cli.progress(started), keep=args.keep)
    except WrkMissingError as exc:
        print(f"{exc}\n(install it with `{INSTALL_HINT}`, then run again)", file=sys.stderr)
        return 2
    data = to_json(results, mode, sizes, time.perf_counter() - started)
    return cli.finish(cli.out_path("http", args), data, render(results), results.failed_checks)

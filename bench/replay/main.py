"""Benchmark replay for recomputation: audit and rebuild, in deltas replayed per second.

Run ``python -m bench.replay [--quick] [--out PATH]``: prints a markdown report and
writes the results as JSON. On a private redis-server, two shapes of threads (the full
run: 2,000 threads of 25 deltas, and 25 threads of 2,000 deltas; 50,000 deltas each),
written with retention on and drained (untimed). Then, timed, in 1 and in 2 processes
(a recomputation runs as Celery slices on the workers; 2 processes for the 2 cores):

* ``audit``: every thread's live state against the replay of its log (all match);
* ``rebuild, matching``: the same, nothing to write;
* ``rebuild, differing``: every thread's first page removed beforehand (untimed), so
  every thread is rewritten from its replay.

Each run is checked: every delta replayed, no thread not replayable, the differences
expected and no other, and after a rebuild every thread's state equal to its state
before the damage (the workers' fold) — a wrong run fails the benchmark. Rounds
alternate the process counts; the best round of each configuration is judged against
the target of 50,000 deltas/s (2 processes). Against another commit's code:
``python -m bench.ab replay --base REV``.
"""

from __future__ import annotations

import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from bench.common import cli, services
from bench.common.machine import load_average
from bench.common.store import store_for
from bench.replay import runs, workload
from bench.replay.report import render
from bench.replay.runs import Run
from bench.replay.targets import judge
from bench.replay.workload import Shape
from threadfold.core import dump_messages
from threadfold.workers.storage.store import Store

Progress = Callable[[str], None]
AUDIT, MATCHING, DIFFERING = "audit", "rebuild, matching", "rebuild, differing"


@dataclass(frozen=True)
class Sizes:
    shapes: tuple[Shape, ...]
    processes: tuple[int, ...]
    rounds: int


FULL = Sizes((Shape(2000, 25), Shape(25, 2000)), (1, 2), 3)
QUICK = Sizes((Shape(200, 25), Shape(5, 400)), (1, 2), 1)


def _states(store: Store, refs: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    out = {}
    for ref in refs:
        page = store.read_state(ref)
        out[ref] = dump_messages(page.messages) if page is not None else []
    return out


def _check(run: Run, shape: Shape, restored: bool | None) -> str:
    """Why the run is wrong ('' when it is right)."""
    problems = []
    if run.errors:
        problems.append(f"not replayable: {run.errors[0]}")
    if run.deltas != shape.deltas or run.threads != shape.threads:
        problems.append(f"{run.deltas} deltas of {run.threads} threads replayed")
    want = shape.threads if run.op == DIFFERING else 0
    if run.differing != want:
        problems.append(f"{run.differing} threads differing, expected {want}")
    if restored is False:
        problems.append("a rebuilt state is not the state before the damage")
    return "; ".join(problems)


def measure(sizes: Sizes, progress: Progress) -> tuple[list[dict[str, Any]], str]:
    """Every run of every shape; the machine's description."""
    rows: list[dict[str, Any]] = []
    load = load_average()
    with services.redis_server() as server:
        store = store_for(workload.settings_for(server.url))
        for k, shape in enumerate(sizes.shapes):
            refs = workload.fill(server.url, shape, prefix=f"s{k}")
            states = _states(store, refs)
            progress(f"{shape.name}: written and drained")
            for n in range(sizes.rounds):
                order = sizes.processes if n % 2 == 0 else tuple(reversed(sizes.processes))
                for processes in order:
                    for op in (AUDIT, MATCHING, DIFFERING):
                        if op == DIFFERING:
                            workload.damage(store, refs)
                        kind: runs.Op = "audit" if op == AUDIT else "rebuild"
                        run = runs.timed(server.url, refs, kind, processes, op)
                        restored = None if op == AUDIT else _states(store, refs) == states
                        wrong = _check(run, shape, restored)
                        rows.append({**run.to_json(), "shape": shape.name, "round": n,
                                     "check": wrong or "ok"})
                        progress(f"{shape.name}, {op}, {processes} proc: "
                                 f"{run.rate:,.0f} deltas/s"
                                 f"{' WRONG: ' + wrong if wrong else ''}")
        store.client.close()
        machine = (f"{os.cpu_count()} cores; load average before {load}, after {load_average()}; "
                   "Redis and the replaying processes on this machine")
    return rows, machine


def main(argv: Sequence[str] | None = None) -> int:
    args = cli.parser("replay", __doc__, "small sizes, about half a minute").parse_args(argv)
    mode, sizes = cli.sizes(args, FULL, QUICK)
    started = time.perf_counter()
    rows, machine = measure(sizes, cli.progress(started))
    verdict = judge(rows)
    meta = {"mode": mode, "seconds": round(time.perf_counter() - started, 1),
            "python": sys.version.split()[0], "platform": platform.platform(),
            "machine": machine, "sizes": asdict(sizes),
            "rate": "deltas replayed / wall seconds from the processes' start to the last's end"}
    cli.write(cli.out_path("replay", args), {"meta": meta, "target": verdict, "runs": rows})
    print(render(rows, verdict, machine))
    wrong = [r for r in rows if r["check"] != "ok"]
    for row in wrong:
        print(f"CHECK FAILED: {row['shape']}, {row['op']}: {row['check']}",
              file=sys.stderr)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())

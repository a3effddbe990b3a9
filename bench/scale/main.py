"""Scale-out on Redis Cluster (issue 25, item 1), measured on this machine, and the
capacity model it feeds (item 2, :mod:`bench.scale.model`).

Run ``python -m bench.scale [--quick] [--out PATH]``. Every process runs on the same
two cores, so adding primaries and workers cannot add throughput here: what scale-out
must keep is the **CPU per delta**, which is what a bigger deployment multiplies.

1. **grid**: Redis Cluster with 1, 3 and 6 primaries (every size built the same way,
   :mod:`bench.scale.stack`) x 1, 2 and 4 Celery worker processes; a batch of spread
   deltas (one delta of a thread a bulk of 500, through ``enqueue_stream``: every
   delta folded by the workers, the path whose cost grows with shards if anything
   does) until every thread has applied all of its; the CPU per delta of the producer,
   the workers, each node and the broker. Target: every configuration's total within
   1.2x of one primary and one worker's.
2. **hot thread**: 3 primaries, 2 workers, half of every bulk to one thread: each
   node's CPU (the hot thread's against the others'); then, paced at a rate the
   stack sustains, the other threads' enqueue-to-visible p50/p99 with and without the
   hot thread at the same total rate.
3. **a flooding tenant**: 3 primaries, 2 workers; a quiet tenant paced alone, then
   while another tenant appends bulks of 500 through ``threadfold.Client`` as fast as
   it can from a process of its own, first with no share, then held to its share
   (``THREADFOLD_TENANT_RATE``, the fairness mechanism,
   :mod:`threadfold.workers.threads.admission`): the quiet tenant's p99 against its
   baseline. Target: within 2x.

Sample threads of every run are checked against the one-delta-at-a-time fold (a wrong
state fails the run). The model (``python -m bench.scale.model``) reads this run's
JSON: its predictions of these points and its projections are in docs/scaling.md.
"""

from __future__ import annotations

import multiprocessing
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.common import cli, services
from bench.common.checks import Check
from bench.scale import report, runs
from bench.scale.runs import Pace, Shape
from bench.scale.stack import running

Say = Callable[[str], None]
#: (name, whether the flood is held to its share, the flooding process's nice value):
#: niced, the flood's own client takes only what the stack leaves of the two cores, as
#: a client on a machine of its own would; its Redis and worker load stay.
FLOODS = (("flooded", False, 0), ("flooded, share", True, 0),
          ("flooded, client niced", False, 19), ("flooded, share, client niced", True, 19))


@dataclass(frozen=True)
class Sizes:
    primaries: tuple[int, ...]
    workers: tuple[int, ...]
    shape: Shape
    repeats: int
    pace_seconds: float
    quiet_rate: float
    hot_rate: float
    flood_share: float


FULL = Sizes((1, 3, 6), (1, 2, 4), Shape(3000, 8, 500, 1), 2, 8.0, 300.0, 3000.0, 2000.0)
QUICK = Sizes((1, 3), (1, 2), Shape(600, 4, 300, 1), 1, 3.0, 200.0, 1500.0, 1000.0)


def grid(sizes: Sizes, logs: Path, say: Say) -> list[dict[str, Any]]:
    out = []
    for m in sizes.primaries:
        for w in sizes.workers:
            with running(m, w, logs) as st:
                runs.batch(st, Shape(200, 2, 200, 1), f"warm{m}x{w}")  # scripts, pools
                quiet = runs.idle(st)
                for r in range(sizes.repeats):
                    got = runs.batch(st, sizes.shape, f"g{m}x{w}r{r}")
                    out.append({"primaries": m, "workers": w, "repeat": r, **quiet, **got})
                    say(f"grid {m} primaries x {w} workers: {got['rate']:,.0f} deltas/s, "
                        f"{got['total_us']:.1f} µs a delta (workers {got['workers_us']:.1f}, "
                        f"redis {got['redis_us']:.1f})")
    return out


def hot(sizes: Sizes, logs: Path, say: Say) -> dict[str, Any]:
    shape = Shape(sizes.shape.threads, sizes.shape.per_thread, sizes.shape.bulk, 1, hot=0.5)
    with running(3, 2, logs) as st:
        got = runs.batch(st, shape, "hot")
        say(f"hot thread: nodes {[round(x, 1) for x in got['nodes_us']]} µs a delta, "
            f"hot on node {got['hot_node']}")
        lag: dict[str, Any] = {}
        for name, share in (("without", 0.0), ("with", 0.5)):
            pace = Pace(sizes.hot_rate, sizes.pace_seconds, sizes.shape.threads, hot=share)
            lag[name] = runs.paced(st, pace, f"hotlag-{name}")
            say(f"cold threads' lag {name} the hot thread: p99 {lag[name]['p99_ms']:.1f} ms")
    return {"batch": got, "lag": lag}


def tenants(sizes: Sizes, logs: Path, say: Say) -> dict[str, Any]:
    """The quiet tenant alone, then beside a flood without a share, then beside one held
    to ``flood_share`` deltas a second (the fairness mechanism, THREADFOLD_TENANT_RATE)."""
    quiet = Pace(sizes.quiet_rate, sizes.pace_seconds, 500, tenant="quiet")
    out: dict[str, Any] = {"flood_share": sizes.flood_share}
    with running(3, 2, logs) as st:
        out["alone"] = runs.paced(st, quiet, "q-alone")
        say(f"quiet tenant alone: p99 {out['alone']['p99_ms']:.1f} ms")
        for name, share, nice in FLOODS:
            out[name] = _beside_a_flood(st, sizes, quiet, sizes.flood_share if share else 0.0,
                                        nice=nice, name=name)
            say(f"quiet tenant {name}: flood {out[name]['flood_rate']:,.0f} deltas/s, "
                f"p99 {out[name]['p99_ms']:.1f} ms")
    return out


def _beside_a_flood(st: Any, sizes: Sizes, quiet: Pace, share: float, *, nice: int,
                    name: str) -> dict[str, Any]:
    ctx = multiprocessing.get_context("spawn")
    stop, counted = ctx.Event(), ctx.Queue()
    urls = (st.settings.redis_url.get_secret_value(), st.settings.broker)
    child = ctx.Process(target=runs.flood, args=(urls, sizes.shape, share, stop, counted),
                        kwargs={"nice": nice})
    child.start()
    try:
        time.sleep(2.0)  # the flood under way (its start-up is not the quiet tenant's)
        got = runs.paced(st, quiet, "q-" + name.replace(", ", "-").replace(" ", "-"))
    finally:
        stop.set()
        flood_deltas = counted.get(timeout=120)
        child.join(30)
    return {**got, "flood_rate": flood_deltas / (sizes.pace_seconds + 2.0)}


def checks(results: dict[str, Any]) -> list[Check]:
    found = [r["check"] for r in results["grid"]] + [results["hot"]["batch"]["check"]]
    return [Check(**c) for c in found if not c["ok"]]


def main(argv: Sequence[str] | None = None) -> int:
    begun = cli.begin("scale", __doc__, "1 and 3 primaries x 1 and 2 workers, short", argv,
                      full=FULL, quick=QUICK)
    say = cli.progress(begun.started)
    with services.log_dir() as logs:
        results: dict[str, Any] = {"meta": begun.facts(), "sizes": asdict(begun.sizes)}
        results["grid"] = grid(begun.sizes, logs, say)
        results["hot"] = hot(begun.sizes, logs, say)
        results["tenants"] = tenants(begun.sizes, logs, say)
    base = statistics.median(r["total_us"] for r in results["grid"]
                             if r["primaries"] == 1 and r["workers"] == 1)
    results["base_total_us"] = base
    return cli.finish(cli.out_path("scale", begun.args), results, report.render(results),
                      checks(results))

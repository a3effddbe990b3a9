"""The peer benchmark: threadfold beside LangGraph persisted by ``PostgresSaver``, the
system a LangGraph user keeps a conversation in instead, in one run on one machine.

Run ``python -m bench.peer [--quick] [--out PATH]``: prints a markdown report and
writes ``bench/results/peer.json``. For each shape (a thread prefilled to 100, then to
2,000 messages; :mod:`bench.peer.workload`), in rounds that alternate the order of the
four contenders (:mod:`bench.peer.sides`), ``--writers`` processes (default 4) apply
the same one-message deltas spread over the threads, one call each
(:mod:`bench.peer.run`). Reported per contender (medians of the rounds): deltas/s until
every delta is visible, CPU per delta (the writers' and the services'), p99 of a call
and of the time to visible.

LangGraph's rate is the bound of this benchmark's length: at a few hundred deltas a
second it is given the first ``peer_threads`` threads of the workload (the same deltas
as ours for those threads), threadfold all of them. Every run is checked: for those
threads all four final states are equal, and for every thread threadfold's two are
equal to the delta reducer's fold of the same deltas (``threadfold.core``, itself
tested against LangGraph's). A wrong run fails. PostgreSQL is the machine's
(``--postgres``, default ``postgresql://postgres@127.0.0.1:5432``) in a database the
benchmark creates and drops (``threadfold_peer``); threadfold runs on a private Redis,
broker, two Celery workers and one API process (:func:`bench.common.stack.running`).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any, Final

import psycopg
from langgraph.checkpoint.postgres import PostgresSaver

from bench.common import cli, services
from bench.common.checks import first_difference
from bench.common.machine import code_measured, load_average, run_facts
from bench.common.stack import Stack, running
from bench.peer.report import render
from bench.peer.run import Job, Outcome, postgres_cpu, run, thread_name
from bench.peer.sides import KINDS, Where, open_side
from bench.peer.targets import judge
from bench.peer.workload import Shape
from threadfold.core import apply_deltas, dump_messages

Progress = Callable[[str], None]
DATABASE: Final = "threadfold_peer"

FULL: Final = (Shape(100, 10, 2_000, 40), Shape(2_000, 10, 300, 12))
QUICK: Final = (Shape(100, 3, 30, 4), Shape(400, 2, 10, 2))


@dataclass(frozen=True)
class Failure:
    name: str
    detail: str


@contextmanager
def database(server: str, name: str = DATABASE) -> Iterator[str]:
    """A fresh database of this benchmark's own (``name``); its DSN. Dropped on the way out."""
    with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        admin.execute(f"CREATE DATABASE {name}")
    dsn = f"{server}/{name}"
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            PostgresSaver(conn).setup()  # type: ignore[arg-type]  # psycopg's row factory
        yield dsn
    finally:
        with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _stack_cpu(stack: Stack) -> Callable[[], float]:
    def cpu() -> float:
        c = stack.cpu()
        return sum(c.apis.values()) + c.workers + c.beat + c.redis + c.broker

    return cpu


@dataclass(frozen=True)
class Bench:
    """What every round runs on."""

    where: Where
    stack: Stack
    writers: int
    #: Every this many deltas, one's time to visible is measured.
    sample: int = 10


def _settled(stack: Stack) -> None:
    """The prefill applied, so that the run folds only its deltas."""
    stack.wait_drained(600)


def _round(r: int, shape: Shape, bench: Bench,
           say: Progress) -> tuple[dict[str, Outcome], list[Failure]]:
    """Every contender once, in this round's order, then the round's states checked."""
    order = KINDS if r % 2 == 0 else tuple(reversed(KINDS))
    outcomes: dict[str, Outcome] = {}
    stack = bench.stack
    for kind in order:
        job = Job(kind, bench.where, shape, bench.writers, f"peer-{shape.length}-r{r}-{kind}",
                  bench.sample)
        tf = not kind.startswith("langgraph")
        out = run(job, stack.settings.keyspace,
                  service_cpu=_stack_cpu(stack) if tf else postgres_cpu,
                  settle=(lambda: _settled(stack)) if tf else (lambda: None))
        say(f"  {kind}: {out.rate:,.0f} deltas/s, {out.cpu_us:,.0f} µs CPU a delta")
        outcomes[kind] = out
    return outcomes, check(r, shape, bench.where)


def check(r: int, shape: Shape, where: Where) -> list[Failure]:
    """The four final states of the peer threads equal; threadfold's two equal to the
    delta reducer's fold for every thread."""
    sides = {kind: open_side(kind, where) for kind in KINDS}
    failures = []
    try:
        for i in range(shape.threads):
            w = shape.thread(i)
            expected = dump_messages(apply_deltas(w.initial, [[d] for d in w.deltas]))
            kinds = KINDS if i < shape.peer_threads else ("client", "http")
            for kind in kinds:
                got = sides[kind].state(thread_name(f"peer-{shape.length}-r{r}-{kind}", i))
                if detail := first_difference(got, expected):
                    failures.append(Failure(f"{kind} thread {i} at {shape.length}", detail))
    finally:
        for side in sides.values():
            side.close()
    return failures


def measure(shapes: Sequence[Shape], rounds: int, writers: int, server: str, say: Progress,
            *, wake_window_ms: float = 5.0) -> dict[str, Any]:
    data: dict[str, Any] = {"shapes": [], "failures": []}
    # Both clients' wake window: the API reads it from its environment at start.
    os.environ["THREADFOLD_WAKE_WINDOW_MS"] = f"{wake_window_ms:g}"
    with services.log_dir() as logs, running([1], 2, logs) as stack, \
            database(server) as dsn:
        api = next(iter(stack.apis.values()))
        settings = stack.settings
        broker = settings.broker_url.get_secret_value() if settings.broker_url else ""
        bench = Bench(Where(dsn, settings.redis_url.get_secret_value(), broker, api.url,
                            wake_window_ms / 1000), stack, writers)
        for shape in shapes:
            per: dict[str, list[dict[str, Any]]] = {k: [] for k in KINDS}
            for r in range(rounds):
                say(f"{shape.length} messages a thread, round {r + 1} of {rounds}")
                outcomes, failures = _round(r, shape, bench, say)
                data["failures"] += [asdict(f) for f in failures]
                for kind, out in outcomes.items():
                    per[kind].append(_figures(out))
            data["shapes"].append({"shape": asdict(shape), "rounds": per,
                                   "median": {k: _median(v) for k, v in per.items()}})
    return data


def _p99(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] if ordered else 0.0


def _figures(out: Outcome) -> dict[str, Any]:
    visible = out.visible_ms or out.calls_ms  # LangGraph's: visible when the call returns
    return {"deltas": out.deltas, "seconds": out.seconds, "rate": out.rate,
            "cpu_us": out.cpu_us, "writer_cpu_us": 1e6 * out.writer_cpu / out.deltas,
            "service_cpu_us": 1e6 * out.service_cpu / out.deltas,
            "call_p50_ms": statistics.median(out.calls_ms), "call_p99_ms": _p99(out.calls_ms),
            "visible_p50_ms": statistics.median(visible), "visible_p99_ms": _p99(visible),
            "visible_samples": len(visible)}


def _median(rounds: Sequence[dict[str, Any]]) -> dict[str, float]:
    return {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}


def main(argv: Sequence[str] | None = None) -> int:
    parser = cli.parser("peer", __doc__, "two small shapes, one round: a minute or so")
    parser.add_argument("--rounds", type=int, default=None, help="rounds (default 3; 1 quick)")
    parser.add_argument("--writers", type=int, default=None,
                        help="writer processes (default 4; 2 quick)")
    parser.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432",
                        help="the PostgreSQL server (its database threadfold_peer is used)")
    parser.add_argument("--wake-window-ms", type=float, default=5.0,
                        help="the clients' and the API's wake window (default 5, theirs)")
    args: argparse.Namespace = parser.parse_args(argv)
    mode, shapes = cli.sizes(args, FULL, QUICK)
    rounds = args.rounds or (1 if args.quick else 3)
    started = time.perf_counter()
    before, code = load_average(), code_measured()
    writers = args.writers or (2 if args.quick else 4)
    data = measure(shapes, rounds, writers, args.postgres, cli.progress(started),
                   wake_window_ms=args.wake_window_ms)
    data["targets"] = judge(data["shapes"])
    data["meta"] = {"mode": mode, "rounds": rounds, "writers": writers,
                    "wake_window_ms": args.wake_window_ms,
                    **run_facts(started, before, code)}
    failed = [Failure(f["name"], f["detail"]) for f in data["failures"]]
    return cli.finish(cli.out_path("peer", args), data, render(data), failed)


if __name__ == "__main__":
    sys.exit(main())

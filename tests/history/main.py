"""The long history check of replay (issue 14): ``python -m tests.history --minutes N``.

Starts the whole service as ``threadfold up`` does (a private redis-server with its
append-only file, a broker redis-server, a Celery worker of 2 processes, beat, the API)
with :data:`tests.history.run.SETTINGS`, runs :mod:`tests.history` for ``--minutes``,
lets everything quiesce and checks every answer offline. Writes the counts (operations
by kind, answers by kind, wrong answers) to ``tests/history/history.json``; exits 1 on
a wrong answer, keeping the whole history beside it (``history-wrong.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from tests.history.driver import Plan
from tests.history.run import SETTINGS, THREADS, run
from tests.history.session import Target
from tests.workers.harness import FAST
from threadfold.workers.ops.stack import start_stack
from threadfold.workers.settings import Settings

#: The record of the last long run, which docs/benchmarks.md quotes.
RESULTS = Path(__file__).with_name("history.json")


def _args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tests.history", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=10.0, help="how long to drive")
    parser.add_argument("--seed", type=int, default=None, help="default: a random one")
    parser.add_argument("--drivers", type=int, default=6, help="threads doing operations")
    parser.add_argument("--out", type=Path, default=RESULTS)
    return parser.parse_args(argv)


def _say(started: float, message: str) -> None:
    # Progress on stderr: stdout carries the counts.
    print(f"[{time.perf_counter() - started:6.1f}s] {message}", file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    args = _args(argv)
    started = time.perf_counter()
    seed = args.seed if args.seed is not None else random.randrange(2**31)
    settings = Settings(**{**FAST, **SETTINGS, "log_level": "WARNING"})
    with tempfile.TemporaryDirectory(prefix="threadfold-history-") as folder:
        _say(started, f"starting the stack; seed {seed}")
        stack = start_stack(settings, redis_url=None, workers=2, port=0, data_dir=Path(folder))
        try:
            target = Target(stack.client_settings(settings), stack.api_url,
                            [sys.executable, "-m", "threadfold.workers.ops.cli"],
                            dict(stack.env), Path.cwd())
            _say(started, f"driving for {args.minutes:g} min, then quiescing and checking")
            driven = time.monotonic()
            history, verdict = run(target, Plan(args.minutes * 60, seed, drivers=args.drivers))
            seconds = time.monotonic() - driven
        finally:
            stack.stop()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "meta": {"date": time.strftime("%Y-%m-%d %H:%M"), "seed": seed, "minutes": args.minutes,
                 "drivers": args.drivers, "threads": THREADS, "seconds": round(seconds, 1),
                 "load_average": " ".join(f"{x:.2f}" for x in os.getloadavg()),
                 "settings": SETTINGS},
        **verdict.as_dict(),
    }, indent=2, default=str) + "\n")
    print(json.dumps({k: v for k, v in verdict.as_dict().items() if k != "wrong"}, indent=2))
    if verdict.wrong:
        kept = args.out.with_name("history-wrong.json")
        history.save(kept)
        print(f"{len(verdict.wrong)} wrong answers (seed {seed}); the history: {kept}")
        print("\n".join(verdict.wrong[:20]))
        return 1
    print(f"{verdict.total:,} operations, 0 wrong answers (seed {seed}); {args.out}")
    return 0

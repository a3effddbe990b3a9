"""``python -m threadfold.loadtests --host URL``: the load test, headless, against any deployment.

Options Locust knows (or the locustfile adds: ``--threads``, ``--stages``, ...) may
follow and are passed through, as may ``LOADTEST_*`` variables.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from threadfold.loadtests.run import run_loadtest


def parse(argv: Sequence[str]) -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser(
        prog="python -m threadfold.loadtests",
        description="Load-test a threadfold API with Locust; unknown options go to Locust.",
    )
    parser.add_argument("--host", required=True, help="The API's base URL, e.g. http://h:8000")
    parser.add_argument("--users", type=int, default=int(os.environ.get("LOADTEST_USERS", "20")))
    parser.add_argument(
        "--spawn-rate", type=float, default=float(os.environ.get("LOADTEST_SPAWN_RATE", "5"))
    )
    parser.add_argument(
        "--duration",
        type=int,
        default=int(os.environ.get("LOADTEST_DURATION", "60")),
        help="Seconds of load (LOADTEST_DURATION).",
    )
    parser.add_argument(
        "--out", type=Path, default=Path("loadtest-results"), help="Directory of the reports."
    )
    return parser.parse_known_args(argv)


def main(argv: Sequence[str]) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s %(message)s")
    args, passthrough = parse(argv)
    code = run_loadtest(
        args.host, args.users, args.spawn_rate, args.duration, args.out, extra_args=passthrough
    )
    print(f"reports in {args.out}/ (report.html, stats_*.csv, check.json); exit code {code}")
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

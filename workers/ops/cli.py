"""``threadfold``: run, operate and measure the service (the process edge: reads env).

    threadfold up [--workers N] [--port P] [--demo]   the whole local stack (Ctrl-C stops it)
    threadfold api | worker | beat                  one process of a deployment
    threadfold demo                                 write a demo conversation and print it
    threadfold status [THREAD]                      backlog, lag, quarantined threads
    threadfold retry THREAD [--skip]                lift a thread's quarantine
    threadfold recompute --audit|--rebuild [--dry-run] ...   replay threads from their logs
    threadfold prune [--tenant T] [--prefix P] [--metadata K=V] [--idle S] [--dry-run]
    threadfold loadtest [...]                       Locust against the local stack (or --host)
    threadfold bench [NAME [ARGS...]]               a benchmark (from a source checkout)

Settings come from ``THREADFOLD_*``; ``up`` starts its own redis-server unless
``REDIS_URL`` (or ``THREADFOLD_REDIS_URL``) names one.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

import redis

from threadfold.workers.ops import commands
from threadfold.workers.redact import Redactor, url_secrets


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="threadfold", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="run redis, workers, beat and the API locally")
    up.add_argument("--workers", type=int, default=2,
                    help="pool processes of the Celery worker (default 2)")
    up.add_argument("--port", type=int, default=8000, help="API port (0: any free port)")
    up.add_argument("--data-dir", type=Path, default=Path(".threadfold"))
    up.add_argument("--demo", action="store_true", help="write the demo conversation once up")
    up.add_argument("--exit", action="store_true", help="stop again after starting (and the demo)")
    sub.add_parser("api", help="serve the HTTP API")
    worker = sub.add_parser("worker", help="run a Celery worker")
    worker.add_argument("--concurrency", type=int, default=os.cpu_count() or 1)
    sub.add_parser("beat", help="run the sweeper schedule (exactly one per deployment)")
    demo = sub.add_parser("demo", help="write the demo conversation through the producer")
    demo.add_argument("--api", default="http://127.0.0.1:8000", help="API URL to print")
    status = sub.add_parser("status", help="backlog and quarantine, or one thread's status")
    status.add_argument("thread", nargs="?")
    status.add_argument("--tenant", default="_")
    retry = sub.add_parser("retry", help="lift a thread's quarantine")
    retry.add_argument("thread")
    retry.add_argument("--tenant", default="_")
    retry.add_argument(
        "--skip", action="store_true", help="skip the entry the drain failed on (recorded)"
    )
    _recompute_parser(sub)
    _prune_parser(sub)
    _loadtest_parser(sub)
    _bench_parser(sub)
    return parser


#: The benchmarks of a source checkout's bench/ (``python -m bench.NAME``), one line each.
BENCHMARKS = {
    "core": "reducers, the incremental fold, conversion and codec against LangGraph's",
    "pipeline": "end to end: bulk producer, Redis, Celery workers; latency, memory, "
                "commit cost, a naive baseline",
    "http": "the HTTP API under wrk and a paced open-loop generator",
    "replay": "audit and rebuild (recompute), deltas replayed per second",
    "live": "1,000 SSE subscribers while deltas are applied: commit-to-event latency",
    "lifecycle": "bytes per idle thread, expiry, the sweep, search and count at scale",
    "context": "a context window's cost against the thread's length",
    "peer": "beside LangGraph on PostgresSaver: one-message deltas, states checked",
    "budget": "the CPU budget per delta of each process, beside its floor",
    "spread": "the spread shape: one delta a thread, end to end and from outside",
    "failover": "acknowledged deltas lost when the primary is killed, per durability",
    "scale": "CPU per delta on Redis Cluster by primaries and workers; noisy tenants",
    "checkpoint": "ThreadfoldSaver beside PostgresSaver: resume reads, agent loops",
    "redis": "the state Redis's commands, CPU and instructions per delta, per path",
    "ab": "A/B of any benchmark between two commits: ab NAME --base REV [-- ARGS]",
}


def _bench_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    listed = "\n".join(f"  {name:<11} {line}" for name, line in BENCHMARKS.items())
    bench = sub.add_parser(
        "bench", help="run a benchmark (from a source checkout)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run python -m bench.NAME from a source checkout, ARGS passed on "
                    "(--quick: small sizes; --help: the benchmark's options).",
        epilog=f"benchmarks:\n{listed}",
    )
    bench.add_argument("which", nargs="?", default="core", choices=list(BENCHMARKS),
                       metavar="NAME", help="the benchmark (default core)")
    bench.add_argument("--quick", action="store_true", help="small sizes (as ARGS, too)")
    bench.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS",
                       help="passed on to python -m bench.NAME")


def _recompute_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    recompute = sub.add_parser("recompute", help="replay threads from their retained logs")
    mode = recompute.add_mutually_exclusive_group(required=True)
    mode.add_argument("--audit", action="store_true", help="compare replay and live state")
    mode.add_argument("--rebuild", action="store_true", help="replace live state by the replay")
    recompute.add_argument(
        "--dry-run",
        action="store_true",
        help="with --rebuild: show what it would change per thread, write nothing",
    )
    recompute.add_argument(
        "--threads", default=None, help="comma-separated thread ids (tenant/id for a tenant's)"
    )
    recompute.add_argument("--tenant", default=None, help="every thread of this tenant")
    recompute.add_argument("--prefix", default=None, help="thread ids starting with this")
    recompute.add_argument("--all", action="store_true", help="every thread")
    recompute.add_argument(
        "--timeout", type=float, default=3600.0, help="seconds to wait for the results"
    )


def _prune_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    prune = sub.add_parser(
        "prune", help="remove threads by tenant, id prefix, metadata or idle age (never pinned)"
    )
    prune.add_argument("--tenant", default=None, help="only this tenant's (default: every)")
    prune.add_argument("--prefix", default="", help="thread ids starting with this")
    prune.add_argument(
        "--metadata",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="holding this metadata value (a JSON number or boolean as one; repeatable)",
    )
    prune.add_argument("--idle", type=float, default=None, metavar="SECONDS",
                       help="idle (no append, no commit) this long or longer")
    prune.add_argument("--dry-run", action="store_true", help="count them, remove nothing")


def _loadtest_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    loadtest = sub.add_parser(
        "loadtest", help="run Locust headless; starts a local stack unless --host is given"
    )
    loadtest.add_argument("--host", default=None, help="an existing deployment's URL")
    loadtest.add_argument("--users", type=int, default=50)
    loadtest.add_argument("--spawn-rate", type=float, default=10.0)
    loadtest.add_argument("--duration", type=int, default=60, help="seconds")
    loadtest.add_argument("--out", type=Path, default=Path("loadtests/reports"))
    loadtest.add_argument("--workers", type=int, default=2)


def _secrets() -> list[str]:
    """What no message may show, from the environment (read here, at the edge, even when
    the settings are invalid: their error must not show them either)."""
    names = ("REDIS_URL", "THREADFOLD_REDIS_URL", "THREADFOLD_BROKER_URL")
    found = [s for name in names for s in url_secrets(os.environ.get(name, ""))]
    with contextlib.suppress(ValueError):
        keys = json.loads(os.environ.get("THREADFOLD_API_KEYS", ""))
        found += [key for key in keys if isinstance(key, str)] if isinstance(keys, dict) else []
    return found


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    handler = getattr(commands, f"cmd_{args.command}")
    redact = Redactor(_secrets())
    try:
        code: int = handler(args)
    except commands.CommandError as exc:
        print(f"threadfold {args.command}: {redact(str(exc))}", file=sys.stderr)
        return 2
    except redis.RedisError as exc:  # Redis unreachable, refused the password, ...
        print(f"threadfold {args.command}: Redis error: {redact(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception:  # noqa: BLE001  # its traceback, without the secrets it may hold
        print(redact(traceback.format_exc()), end="", file=sys.stderr)
        return 1
    return code


if __name__ == "__main__":
    sys.exit(main())

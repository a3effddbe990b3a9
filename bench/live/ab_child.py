"""One side of the feed A/B, run inside its tree (working directory and ``PYTHONPATH``
= the tree, see :mod:`bench.live.trees`): ``python -m bench.live.ab_child --quick|--full``.

It starts the pipeline's services (state and broker Redis, 2 Celery workers, warmed up)
and prints one JSON line: which code it imported (:func:`bench.live.trees.proof`). Then,
for every ``run <prefix>`` line on stdin, one headline end-to-end run
(:func:`bench.pipeline.e2e.run`, states verified) and one JSON line of its figures and
of what the feed left in Redis (feed streams of the run's threads, PUBLISH calls), which
shows which COMMIT the workers ran. ``quit`` (or end of input) stops it. Progress goes
to stderr: stdout carries only the JSON lines.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from bench.common import cli
from bench.live import trees
from bench.pipeline import e2e, services
from bench.pipeline.main import FULL, QUICK
from bench.pipeline.workload import ref_of, thread_id

#: Redis commands whose calls and time the A/B reports (COMMIT's own and the feed's).
COMMANDS = ("evalsha", "xadd", "xtrim", "publish", "zadd", "pexpire", "hset", "hmget")


def _feeds(line: e2e.Pipeline, cfg: e2e.E2EConfig, prefix: str) -> int:
    """How many of the run's threads have a feed stream."""
    pipe = line.client.pipeline(transaction=False)
    for i in range(cfg.threads):
        pipe.exists(line.settings.keyspace.thread(ref_of(thread_id(i, prefix))).feed)
    return sum(int(n) for n in pipe.execute())


def _one(line: e2e.Pipeline, cfg: e2e.E2EConfig, prefix: str) -> dict[str, Any]:
    say = cli.progress(time.perf_counter())
    result = e2e.run(cfg, line, say, prefix=prefix)
    stats = services.commandstats(line.client)  # verify() reads only: the run's writes
    return {
        "rate": result.rate, "deltas": result.deltas, "seconds": result.seconds,
        "wall_seconds": result.wall_seconds,
        "cpu_per_delta_us": result.cpu_per_delta_us,
        "producer_us": result.per_delta_us(result.producer_cpu),
        "worker_us": result.per_delta_us(result.worker_cpu),
        "redis_us": result.per_delta_us(result.redis_cpu),
        "broker_us": result.per_delta_us(result.broker_cpu),
        "check": {"ok": result.check.ok, "name": result.check.name,
                  "detail": result.check.detail},
        "commands": {k: {"calls": stats[k].calls, "usec": stats[k].usec}
                     for k in COMMANDS if k in stats},
        "feed_streams": _feeds(line, cfg, prefix),
    }


def main(argv: list[str]) -> int:
    cfg = (QUICK if "--quick" in argv else FULL).e2e[0]
    with e2e.pipeline(cfg.batch_size) as line:
        print(json.dumps({"ready": True, "proof": trees.proof(),
                          "workers_cwd": [_cwd(p.pid) for p in line.workers]}), flush=True)
        for command in sys.stdin:
            words = command.split()
            if not words or words[0] == "quit":
                break
            print(json.dumps(_one(line, cfg, words[1])), flush=True)
    return 0


def _cwd(pid: int) -> str:
    import psutil  # noqa: PLC0415

    return str(psutil.Process(pid).cwd())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

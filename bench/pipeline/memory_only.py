"""``python -m bench.pipeline.memory_only [--quick]``: the pipeline benchmark's memory part
alone (Redis memory per stored message, the threads' change feeds apart), with the
sizes of ``python -m bench.pipeline`` (``--quick``: its quick sizes). Results:
``bench/results/memory[-quick].json``."""

from __future__ import annotations

import time
from collections.abc import Sequence

from bench.common import cli
from bench.pipeline import memory
from bench.pipeline.main import FULL, QUICK
from bench.pipeline.report import memory_table


def main(argv: Sequence[str] | None = None) -> int:
    args = cli.parser("memory", __doc__, "small sizes").parse_args(argv)
    mode, sizes = cli.sizes(args, FULL, QUICK)
    started = time.perf_counter()
    rows = memory.run(sizes.memory, cli.progress(started))
    data = {"mode": mode, "seconds": round(time.perf_counter() - started, 1),
            "memory": [r.to_json() for r in rows]}
    return cli.finish(cli.out_path("memory", args), data, "\n".join(memory_table(rows)), [])


if __name__ == "__main__":
    raise SystemExit(main())

"""One timed replay, run in the tree it is started in (the code before a change, for the
benchmark's "before" contender): ``python -m bench.replay.one URL OP PROCESSES REFS``
(REFS: a file of thread refs, one a line); prints the run as JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from bench.replay import runs


def main(argv: list[str]) -> None:
    url, op, processes, refs = argv
    kind: runs.Op = "audit" if op == "audit" else "rebuild"
    run = runs.timed(url, Path(refs).read_text().split(), kind, int(processes), op)
    print(json.dumps(run.to_json()))


if __name__ == "__main__":
    main(sys.argv[1:])

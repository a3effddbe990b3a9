"""The clients' own cost per call, base tree against head: ``python -m bench.ab.clients
--base REV [--low N] [--high N] [--out PATH]``.

A redesign of the clients (the front that builds an operation, the transports that
carry it) is held to the same 5% as the API's request path, and measured the same way
(:mod:`bench.ab.handlers`): each side is a fresh process in its own tree
(:func:`bench.ab.trees.worktree`, this tree's bench/ copied in) that makes ``append``
and ``state`` calls through a public client, under callgrind, which counts the
instructions that process runs, its own and no other's (the Redis server and the API
process it talks to are children it starts, not traced). Two kinds: the direct
``threadfold.Client`` (Redis and the broker on a private ``redis-server``; wake-ups
published to it, no workers) and ``threadfold.HttpClient`` (an API process of the same
tree on the same server); and a batch job's path, a delta at each end (``stream``: the
producer's stream of one-delta threads, then a worker's drain of each, in process).
Each side runs three times, (low, low), (high, low) and (high, high) calls (appends,
then reads or drains); a call's count is the difference over ``high - low`` calls, so
start-up, warm-up and the stack's processes cancel out.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.ab import trees
from bench.live import trees as live_trees

KINDS = ("direct", "http", "stream")
#: Calls whose cost is not counted (connections, caches, the first thread's keys).
WARM_UP = 50
MESSAGE = [{"type": "human", "content": "hello"}]


def _side(kind: str, appends: int, states: int) -> dict[str, Any]:
    """One side (``--side``): ``appends`` appends then ``states`` state reads through
    the ``kind`` client, and which threadfold made them."""
    import httpx  # noqa: PLC0415

    import threadfold  # noqa: PLC0415
    from bench.common import services  # noqa: PLC0415
    from threadfold.workers.ops.processes import free_port  # noqa: PLC0415

    with services.redis_server() as redis:
        if kind == "stream":
            _stream(redis.url, appends, states)
            return {"threadfold": _which(threadfold.__file__)}
        if kind == "direct":
            client: Any = threadfold.Client(redis.url, redis.url)
            api = None
        else:
            port = free_port()
            env = {**os.environ, "THREADFOLD_REDIS_URL": redis.url,
                   "THREADFOLD_BROKER_URL": redis.url, "THREADFOLD_PORT": str(port)}
            api = subprocess.Popen([sys.executable, "-m", "threadfold.api"], env=env,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 60
            while True:
                try:
                    if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError("the API never answered")
                time.sleep(0.2)
            client = threadfold.HttpClient(url)
        try:
            for i in range(WARM_UP):
                client.append("warm", MESSAGE, delta_id=f"w{i}")
            for i in range(appends):
                client.append(f"t{i % 100}", MESSAGE, delta_id=f"d{i}")
            for _ in range(states):
                client.state("warm")
        finally:
            client.close()
            if api is not None:
                api.terminate()
                api.wait(timeout=30)
    return {"threadfold": _which(threadfold.__file__)}


def _which(module: str) -> str:
    return str(Path(module).resolve().relative_to(Path.cwd()))


def _stream(url: str, deltas: int, drains: int) -> None:
    """A batch job's path, a delta at each end: ``deltas`` one-delta threads through the
    producer's stream (bulks of 50), then ``drains`` of them folded and committed by a
    worker's drainer, in process (wake-ups dropped: no broker in the path measured)."""
    from threadfold.workers.ingest.producer import Delta  # noqa: PLC0415
    from threadfold.workers.runtime.drain import Drainer  # noqa: PLC0415
    from threadfold.workers.settings import Settings  # noqa: PLC0415

    try:  # the composition root; a tree from before its merge names it entry
        from threadfold.workers import wiring  # noqa: PLC0415
    except ImportError:
        from threadfold.workers import entry as wiring  # type: ignore[attr-defined,no-redef]  # noqa: PLC0415

    class Dropped:
        def wake(self, refs: Any) -> None:
            return None

    settings = Settings(redis_url=url, broker_url=url)
    client = wiring.redis(settings, retries=0)
    producer = wiring.producer(settings, client, Dropped())
    drainer = Drainer(wiring.store(settings), settings)
    warm = [[Delta("warm", MESSAGE, f"w{i}")] for i in range(WARM_UP)]
    for _ in producer.enqueue_stream(warm):
        pass
    drainer.drain("_/warm")
    bulks = ([Delta(f"t{k}", MESSAGE, f"d{k}") for k in range(b, min(b + 50, deltas))]
             for b in range(0, deltas, 50))
    for _ in producer.enqueue_stream(bulks):
        pass
    for k in range(drains):
        drainer.drain(f"_/t{k}")
    client.close()


def _run(tree: Path, kind: str, appends: int, states: int) -> dict[str, Any]:
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
               sys.executable, "-m", "bench.ab.clients", "--side", kind,
               "--appends", str(appends), "--states", str(states)]
    env = {**live_trees.env_for(tree), "PYTHONHASHSEED": "0"}
    out = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True,
                         check=False)
    if out.returncode != 0:
        raise RuntimeError(f"a side failed in {tree.name}: {out.stderr[-2000:]}")
    found: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    collected = re.search(r"Collected : (\d+)", out.stderr)
    if collected is None:
        raise RuntimeError(f"callgrind counted nothing in {tree.name}: {out.stderr[-500:]}")
    found["instructions"] = int(collected[1])
    return found


def count(base: str, low: int, high: int, kinds: tuple[str, ...] = KINDS) -> dict[str, Any]:
    """Instructions per append and per state read, per kind of client, each side."""
    head = live_trees.ROOT
    per: dict[str, dict[str, float]] = {}
    proof: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="threadfold-ab-handlers-") as parent, \
            trees.worktree(base, Path(parent)) as base_tree:
        for kind in kinds:
            for name, tree in (("base", base_tree), ("head", head)):
                both = _run(tree, kind, low, low)
                appends = _run(tree, kind, high, low)
                states = _run(tree, kind, high, high)
                span = high - low
                key = f"{kind} {name}"
                per[key] = {
                    "append": (appends["instructions"] - both["instructions"]) / span,
                    "state": (states["instructions"] - appends["instructions"]) / span,
                }
                proof[key] = both["threadfold"]
                print(f"{key}: {per[key]['append']:,.0f} instructions/append, "
                      f"{per[key]['state']:,.0f}/state", file=sys.stderr)
    ratios = {f"{kind} {call}": per[f"{kind} head"][call] / per[f"{kind} base"][call]
              for kind in kinds for call in ("append", "state")}
    return {"base": live_trees.resolve(base), "head": live_trees.git("rev-parse", "HEAD"),
            "low": low, "high": high, "proof": proof, "instructions": per,
            "ratios": ratios}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ab.clients",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default="HEAD~1")
    parser.add_argument("--low", type=int, default=100)
    parser.add_argument("--high", type=int, default=600)
    parser.add_argument("--out", type=Path, default=Path("bench/results/ab-clients.json"))
    parser.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS))
    parser.add_argument("--side", choices=KINDS)
    parser.add_argument("--appends", type=int, default=0)
    parser.add_argument("--states", type=int, default=0)
    args = parser.parse_args(argv)
    if args.side:
        print(json.dumps(_side(args.side, args.appends, args.states)))
        return 0
    data = count(args.base, args.low, args.high, tuple(args.kinds))
    args.out.write_text(json.dumps(data, indent=2) + "\n")
    print("instructions per call, head/base: " + ", ".join(
        f"{k} {v:.4f}" for k, v in data["ratios"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())

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
tree on the same server). Each side runs three times (low, low), (high, low), (low,
high) calls; a call's count is the difference over ``high - low`` calls, so start-up,
warm-up and the stack's processes cancel out.
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

KINDS = ("direct", "http")
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
    return {"threadfold": str(Path(threadfold.__file__).resolve().relative_to(Path.cwd()))}


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


def count(base: str, low: int, high: int) -> dict[str, Any]:
    """Instructions per append and per state read, per kind of client, each side."""
    head = live_trees.ROOT
    per: dict[str, dict[str, float]] = {}
    proof: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="threadfold-ab-handlers-") as parent, \
            trees.worktree(base, Path(parent)) as base_tree:
        for kind in KINDS:
            for name, tree in (("base", base_tree), ("head", head)):
                both = _run(tree, kind, low, low)
                appends = _run(tree, kind, high, low)
                states = _run(tree, kind, low, high)
                span = high - low
                key = f"{kind} {name}"
                per[key] = {
                    "append": (appends["instructions"] - both["instructions"]) / span,
                    "state": (states["instructions"] - both["instructions"]) / span,
                }
                proof[key] = both["threadfold"]
                print(f"{key}: {per[key]['append']:,.0f} instructions/append, "
                      f"{per[key]['state']:,.0f}/state", file=sys.stderr)
    ratios = {f"{kind} {call}": per[f"{kind} head"][call] / per[f"{kind} base"][call]
              for kind in KINDS for call in ("append", "state")}
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
    parser.add_argument("--side", choices=KINDS)
    parser.add_argument("--appends", type=int, default=0)
    parser.add_argument("--states", type=int, default=0)
    args = parser.parse_args(argv)
    if args.side:
        print(json.dumps(_side(args.side, args.appends, args.states)))
        return 0
    data = count(args.base, args.low, args.high)
    args.out.write_text(json.dumps(data, indent=2) + "\n")
    print("instructions per call, head/base: " + ", ".join(
        f"{k} {v:.4f}" for k, v in data["ratios"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The API's own CPU per request, base tree against head, without the stack's noise:
``python -m bench.ab.handlers --base REV [--rounds N] [--requests N] [--out PATH]``.

The full A/B (:mod:`bench.ab.main`) measures the API process under a closed-loop load
beside its Redis, its Celery workers and the load generator, all on the same cores: a
round's head/base ratio there moved from 0.56 to 1.73, so a median of 15 rounds cannot
resolve the 5% a redesign of the API's service layer is held to. This measures only
what that redesign changed, the request's path through the application's Python code:
each side is a fresh process in its own tree (:func:`bench.ab.trees.worktree`, this
tree's bench/ copied in) holding the tree's ASGI app (``create_app`` with
``build_resources``, its lifespan run) on a private ``redis-server``, with wake-ups
dropped (no broker: they are not the path measured); it answers ``POST
/threads/{id}/deltas`` (one message, a fresh thread of a thousand each time round) and
``GET /threads/{id}/state`` (a 100-message thread), called in process through
the ASGI interface itself (no server, socket or client library). Two measures:
``--instructions`` counts the instructions each side's process runs per request under
callgrind (three runs a side, differenced: repeatable whatever the machine does; the
judged one); without it, rounds time each side's own CPU (``time.process_time``),
alternated, the median of their head/base ratios (quick, but as noisy as the cores).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from bench.ab import trees
from bench.live import trees as live_trees

#: How many requests of each kind one side answers per round (after a warm-up).
REQUESTS = 4000
WARM_UP = 300
#: The thread every GET reads, and how many messages it holds.
STATE_THREAD, STATE_MESSAGES = "ab-state", 100


def side(posts: int, gets: int) -> dict[str, Any]:
    """One side's measurement, run inside its tree (``python -m bench.ab.handlers
    --side``): the API's CPU per POST and per GET, and which threadfold answered."""
    return asyncio.run(_side(posts, gets))


async def _side(posts: int, gets: int) -> dict[str, Any]:
    # Imported here: the caller's working directory and PYTHONPATH pick the tree.
    import threadfold  # noqa: PLC0415
    from bench.common import services  # noqa: PLC0415
    from threadfold.api.app import build_resources, create_app  # noqa: PLC0415
    from threadfold.api.settings import ApiSettings  # noqa: PLC0415
    try:  # the composition root; a tree from before its merge names it entry
        from threadfold.workers import wiring  # noqa: PLC0415
    except ImportError:
        from threadfold.workers import entry as wiring  # type: ignore[attr-defined,no-redef]  # noqa: PLC0415
    from threadfold.workers.runtime.drain import Drainer  # noqa: PLC0415

    class Dropped:
        """A waker that publishes nothing: wake-ups are not the path measured."""

        async def wake(self, refs: Sequence[str]) -> None:
            return None

    with services.redis_server() as redis:
        settings = ApiSettings(redis_url=redis.url, broker_url=redis.url)
        app = create_app(settings, build_resources(settings, waker=Dropped()))
        async with _lifespan(app):
            body = {"messages": [{"type": "human", "content": f"m{i}"} for i in range(50)]}
            for _ in range(STATE_MESSAGES // 50):
                await _call(app, "POST", f"/threads/{STATE_THREAD}/deltas", json.dumps(body))
            # Applied here, in process, as a worker would: the GETs read a 100-message
            # state (the POSTs' threads stay unapplied: no workers run while measuring).
            Drainer(wiring.store(settings), settings).drain(f"_/{STATE_THREAD}")
            post = await _timed(app, "POST", posts, WARM_UP)
            get = await _timed(app, "GET", gets, WARM_UP)
    root = Path.cwd()
    return {
        "post_us": post,
        "get_us": get,
        "threadfold": str(Path(threadfold.__file__).resolve().relative_to(root)),
    }


@contextlib.asynccontextmanager
async def _lifespan(app: Any) -> AsyncIterator[None]:
    """The app's startup and shutdown, as a server runs them (ASGI's lifespan)."""
    inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    started, stopped = asyncio.Event(), asyncio.Event()

    async def send(message: dict[str, Any]) -> None:
        kind = message["type"]
        if kind.startswith("lifespan.startup"):
            if kind.endswith("failed"):
                raise RuntimeError(message.get("message", "startup failed"))
            started.set()
        elif kind.startswith("lifespan.shutdown"):
            stopped.set()

    await inbox.put({"type": "lifespan.startup"})
    task = asyncio.create_task(app({"type": "lifespan", "asgi": {"version": "3.0"}},
                                   inbox.get, send))
    await started.wait()
    try:
        yield
    finally:
        await inbox.put({"type": "lifespan.shutdown"})
        await stopped.wait()
        await task


async def _call(app: Any, method: str, path: str, body: str = "") -> int:
    """One request through the ASGI app itself (no server, no socket, no client
    library): the answer's status."""
    raw = body.encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(raw)).encode())]
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
        "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"",
        "root_path": "", "headers": headers if raw else [], "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
    }
    given = False
    status = 0

    async def receive() -> dict[str, Any]:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": raw, "more_body": False}
        await asyncio.Event().wait()  # the client never goes away
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]

    await app(scope, receive, send)
    if status >= 500 or status == 0:
        raise RuntimeError(f"{method} {path} answered {status}")
    return status


async def _timed(app: Any, method: str, requests: int, warm: int) -> float:
    async def one(i: int) -> None:
        if method == "POST":
            delta = {"messages": [{"type": "human", "content": "hello"}], "delta_id": f"d{i}"}
            status = await _call(app, "POST", f"/threads/t{i % 1000}/deltas", json.dumps(delta))
        else:
            status = await _call(app, "GET", f"/threads/{STATE_THREAD}/state")
        if status != (202 if method == "POST" else 200):  # a refusal is a cheaper path
            raise RuntimeError(f"{method} answered {status}")

    for i in range(warm):
        await one(-1 - i)
    started = time.process_time()
    for i in range(requests):
        await one(i)
    return (time.process_time() - started) / max(requests, 1) * 1e6


def _run_side(tree: Path, posts: int, gets: int, *, counted: bool = False) -> dict[str, Any]:
    """One side in its tree; ``counted``: under callgrind, which adds the instructions
    the process ran (its own, not Redis's) as ``instructions``."""
    command = [sys.executable, "-m", "bench.ab.handlers", "--side",
               "--posts", str(posts), "--gets", str(gets)]
    if counted:
        command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *command]
    # A fixed hash seed: the same dicts grow the same way on both sides and every run.
    env = {**live_trees.env_for(tree), "PYTHONHASHSEED": "0"}
    out = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True,
                         check=False)
    if out.returncode != 0:
        raise RuntimeError(f"a side failed in {tree.name}: {out.stderr[-2000:]}")
    found: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    if counted:
        collected = re.search(r"Collected : (\d+)", out.stderr)
        if collected is None:
            raise RuntimeError(f"callgrind counted nothing in {tree.name}: {out.stderr[-500:]}")
        found["instructions"] = int(collected[1])
    return found


def count(base: str, low: int, high: int) -> dict[str, Any]:
    """Instructions per request, each side run three times under callgrind: (low POSTs,
    low GETs), (high, low), (low, high); a request's count is the difference over
    ``high - low`` requests (start-up, warm-up and the state thread cancel out).
    Repeatable to a fraction of a percent, whatever else the machine is doing."""
    head = live_trees.ROOT
    per: dict[str, dict[str, float]] = {}
    proof: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="threadfold-ab-handlers-") as parent, \
            trees.worktree(base, Path(parent)) as base_tree:
        for name, tree in (("base", base_tree), ("head", head)):
            both = _run_side(tree, low, low, counted=True)
            posts = _run_side(tree, high, low, counted=True)
            gets = _run_side(tree, low, high, counted=True)
            span = high - low
            per[name] = {
                "post": (posts["instructions"] - both["instructions"]) / span,
                "get": (gets["instructions"] - both["instructions"]) / span,
            }
            proof[name] = both["threadfold"]
            print(f"{name}: {per[name]['post']:,.0f} instructions/POST, "
                  f"{per[name]['get']:,.0f}/GET", file=sys.stderr)
    return {
        "base": live_trees.resolve(base),
        "head": live_trees.git("rev-parse", "HEAD"),
        "low": low,
        "high": high,
        "proof": proof,
        "instructions": per,
        "ratios": {k: per["head"][k] / per["base"][k] for k in ("post", "get")},
    }


def measure(base: str, rounds: int, requests: int) -> dict[str, Any]:
    """Both trees, ``rounds`` times, alternating which runs first."""
    head = live_trees.ROOT
    runs: dict[str, list[dict[str, Any]]] = {"base": [], "head": []}
    with tempfile.TemporaryDirectory(prefix="threadfold-ab-handlers-") as parent, \
            trees.worktree(base, Path(parent)) as base_tree:
        sides = {"base": base_tree, "head": head}
        for n in range(rounds):
            order = ("base", "head") if n % 2 == 0 else ("head", "base")
            for name in order:
                runs[name].append(_run_side(sides[name], requests, requests))
            print(f"round {n}: " + ", ".join(
                f"{k} {runs[k][-1]['post_us']:.1f} us/POST {runs[k][-1]['get_us']:.1f} us/GET"
                for k in order), file=sys.stderr)
    figures = {}
    for figure in ("post_us", "get_us"):
        ratios = [h[figure] / b[figure] for h, b in zip(runs["head"], runs["base"], strict=True)]
        figures[figure] = {
            "base_median": statistics.median(r[figure] for r in runs["base"]),
            "head_median": statistics.median(r[figure] for r in runs["head"]),
            "ratios": [round(r, 3) for r in ratios],
            "median_ratio": statistics.median(ratios),
        }
    return {
        "base": live_trees.resolve(base),
        "head": live_trees.git("rev-parse", "HEAD"),
        "rounds": rounds,
        "requests": requests,
        "proof": {k: sorted({r["threadfold"] for r in v}) for k, v in runs.items()},
        "figures": figures,
        "runs": runs,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ab.handlers", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", help="the commit to compare this checkout with")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--requests", type=int, default=REQUESTS)
    parser.add_argument("--instructions", action="store_true",
                        help="count instructions under callgrind instead of timing rounds")
    parser.add_argument("--posts", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--gets", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=None, help="write the results as JSON")
    parser.add_argument("--side", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.side:
        print(json.dumps(side(args.posts, args.gets)))
        return 0
    if not args.base:
        parser.error("--base is required")
    if args.instructions:
        counted = count(args.base, 200, 200 + args.requests)
        print(f"instructions per request, head/base: POST {counted['ratios']['post']:.4f}, "
              f"GET {counted['ratios']['get']:.4f}")
        if args.out is not None:
            args.out.write_text(json.dumps(counted, indent=2) + "\n")
        return 0
    result = measure(args.base, args.rounds, args.requests)
    for name, fig in result["figures"].items():
        print(f"{name}: base {fig['base_median']:.1f}, head {fig['head_median']:.1f}, "
              f"head/base per round {fig['ratios']}, median {fig['median_ratio']:.3f}")
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""How much of a state read a whole-response cache could save: the API's CPU for
``GET /threads/{id}/state`` of a 100-message thread, and the share of it that depends
on the messages rather than on the request.

Run ``python -m bench.budget.reads [--rounds N] [--reads N]``. Each round, alternated:

* **the request in process**: the API's ASGI app (``create_app``, its lifespan run, on
  a private ``redis-server``) answering GETs through the ASGI interface itself, no
  server or socket (:mod:`bench.ab.handlers`' side, in a fresh process);
* **its message-dependent steps**, timed one by one in this process on the same
  thread: the READ_STATE round trip (a sync client), splitting the pages it sends into
  records (``read_state.parse_bodies``), looking the 100 messages' JSON up
  (``JsonFragments``, warm: every message cached, as under load) and encoding the
  answer.

A cache of whole answers keyed by the thread's version still needs one round trip to
learn that version (a read's freshness is read-your-writes); what it can remove is the
split, the lookup and the encoding, and the pages' bytes on the wire. So
``split + lookup + encode`` over the request is the most it could save of the API's
CPU, before uvicorn's share, which it cannot touch at all.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import msgspec
import redis

from bench.common import services
from bench.common.tables import table
from threadfold import Client
from threadfold.api.fragments import JsonFragments
from threadfold.workers.redisio.client import run
from threadfold.workers.storage import read_state
from threadfold.workers.threads.service import target

MESSAGES = 100
STEPS = ("round trip", "split", "lookup", "encode")


def _per_call(fn: Callable[[], Any], calls: int) -> float:
    fn()
    started = time.process_time()
    for _ in range(calls):
        fn()
    return (time.process_time() - started) / calls * 1e6


def steps(calls: int) -> dict[str, float]:
    """µs of this process's CPU per call of each message-dependent step."""
    encoder = msgspec.json.Encoder()
    with services.redis_server() as server:
        client = Client(server.url, server.url)
        for i in range(MESSAGES):  # committed by the ingest call: no workers needed
            kind = "human" if i % 2 else "ai"
            client.append("read", [{"type": kind, "content": f"message {i} " * 12}])
        keys = client.settings.keyspace.thread(target(client.tenant, "read").ref)
        plain = redis.Redis.from_url(server.url)
        call = read_state.call(keys)
        raw = run(plain, call)
        bodies = read_state.parse_bodies(raw)
        assert bodies is not None and len(bodies.ids) == MESSAGES
        fragments = JsonFragments(1 << 26)
        answer = fragments.state("read", bodies)
        out = {
            "round trip": _per_call(lambda: run(plain, call), calls),
            "split": _per_call(lambda: read_state.parse_bodies(raw), calls),
            "lookup": _per_call(lambda: fragments.state("read", bodies), calls),
            "encode": _per_call(lambda: encoder.encode(answer), calls),
        }
        plain.close()
        client.close()
    return out


def request(calls: int) -> float:
    """µs of the API's CPU per GET, in process (bench.ab.handlers' side, this tree)."""
    argv = [sys.executable, "-m", "bench.ab.handlers", "--side", "--posts", "300",
            "--gets", str(calls)]
    done = subprocess.run(argv, check=True, capture_output=True, text=True,
                          cwd=services.ROOT)
    return float(json.loads(done.stdout.strip().splitlines()[-1])["get_us"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.budget.reads", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--reads", type=int, default=3000)
    args = parser.parse_args(argv)
    rounds: list[dict[str, float]] = []
    for n in range(args.rounds):
        first, second = (steps, request) if n % 2 == 0 else (request, steps)
        got = {first.__name__: first(args.reads), second.__name__: second(args.reads)}
        row: dict[str, float] = {"request": got["request"], **got["steps"]}
        row["cacheable share"] = sum(row[s] for s in STEPS[1:]) / row["request"]
        rounds.append(row)
        print(f"round {n}: " + ", ".join(f"{k} {v:.2f}" for k, v in row.items()),
              file=sys.stderr)
    names = ("request", *STEPS, "cacheable share")
    rows = []
    for name in names:
        seen = [r[name] for r in rounds]
        rows.append([name, f"{statistics.median(seen):.2f}",
                     f"{min(seen):.2f}-{max(seen):.2f}"])
    print("\n".join(table(["GET of 100 messages", "median (µs; share)", "range"], rows)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The Redis budget per delta: what the state Redis does for each delta on the hot
paths, by script, beside the floor (a pipelined ``XADD`` + ``HSET`` a delta).

Run ``python -m bench.redis [--quick] [--instructions] [--out PATH]`` (``threadfold bench redis``):
prints a markdown table and writes ``bench/results/redis.json``. Each path runs alone
on a fresh private redis-server, driven in this process (the producer, the store, a
worker's drain: no Celery, no HTTP), so every command the server runs meanwhile is the
path's. Per delta (per read for the reads): the script calls, the commands the scripts
run (``INFO commandstats``, which counts a script's commands one by one), the server's
time in them (commandstats' microseconds) and the server's CPU (``INFO cpu``), and the
server time of each script (``SLOWLOG`` at 0 µs, by the script's SHA). With
``--instructions``, every path again on a server under callgrind: the instructions it
runs per delta, which a change of a few percent moves where the CPU time cannot show it
on a shared machine (:mod:`bench.common.instructions`).

The paths, as the service runs them:

* ``one call a delta, committed by the ingest call``: ``enqueue_many`` of one
  one-message delta per call to threads in turn, each idle (the ingest commits it);
* ``one call a delta, then a worker's commit``: the same with the ingest commits off,
  then the threads drained (ingest and commit reported apart);
* ``spread bulk``: bulks of 500 one-message deltas, one per thread, each thread
  written ten times over the run (ingest commits);
* ``headline bulk``: bulks of 500 one-message deltas over 10 threads, then drained
  (a thread's deltas wait for a worker when they are many);
* ``read state``: a page of a 100-message thread; ``read context``: a 4,000-token
  window of it.

A change that adds commands to a hot script shows here as commands and µs per delta.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import asdict, dataclass
from typing import Final

import redis

from bench.common import cli, services
from bench.common.checks import Check
from bench.common.cpu import redis_cpu
from bench.common.inputs import message_dict
from bench.common.instructions import CountedRedis
from bench.common.store import NullWaker, in_process_settings
from threadfold.core.results import Delta
from threadfold.workers.ingest.producer import Producer
from threadfold.workers.redisio.client import sync_client
from threadfold.workers.runtime.drain import Drainer
from threadfold.workers.settings import Settings
from threadfold.workers.storage.store import Store

#: Commands of the measurement itself, not the path's.
_OURS: Final = {"info", "config|resetstat", "config|get", "config|set", "slowlog|get",
                "slowlog|reset", "script|load", "ping", "client|setinfo", "hello"}
_SCRIPTS: Final = {"evalsha", "eval"}
BULK: Final = 500
#: Deltas a path under callgrind (full, quick): the spread bulk's shape (500 threads a
#: call, each written ten times) needs 5,000.
COUNTED: Final = (6_000, 1_000)


@dataclass
class Budget:
    """One path's Redis work, per delta (or per read)."""

    path: str
    units: int
    script_calls: float
    commands: float
    server_us: float
    redis_cpu_us: float
    by_script_us: dict[str, float]
    #: The commands the scripts ran, by name, per delta: where a feature's cost shows.
    by_command: dict[str, float]
    #: The server's instructions per delta (or read) under callgrind, with
    #: ``--instructions``: a change of a few percent shows here, not in the CPU time.
    instructions: float | None = None


@contextmanager
def _measured(client: redis.Redis, path: str, units: int, out: list[Budget]) -> Iterator[None]:
    """The path's commands and CPU (``out`` gets its row). The script log runs in a pass
    of its own (:func:`_attributed`): a slowlog entry per call costs the server CPU."""
    client.config_resetstat()
    cpu = redis_cpu(client)
    yield
    cpu = redis_cpu(client) - cpu
    stats = services.commandstats(client)
    calls = sum(s.calls for n, s in stats.items() if n in _SCRIPTS)
    inner = sum(s.calls for n, s in stats.items() if n not in _SCRIPTS | _OURS)
    usec = sum(s.usec for n, s in stats.items() if n in _SCRIPTS or n not in _OURS)
    commands = {n: s.calls / units for n, s in stats.items() if n not in _SCRIPTS | _OURS}
    out.append(Budget(path, units, calls / units, inner / units, usec / units,
                      cpu * 1e6 / units, {}, commands))


@contextmanager
def _attributed(client: redis.Redis, path: str, units: int, out: list[Budget]) -> Iterator[None]:
    """The server time of each script on the path, into its row of ``out``."""
    with services.script_log(client, max_len=1_000_000) as scripts:
        yield
    row = next(r for r in out if r.path == path)
    row.by_script_us.update({name: sum(v) / units for name, v in scripts.items()})


Measure = Callable[[redis.Redis, str, int, list[Budget]], AbstractContextManager[None]]


def _counted(server: CountedRedis) -> Measure:
    """The server's instructions on the path, into its row of ``out`` (a pass of its own,
    on a server under callgrind: :mod:`bench.common.instructions`)."""

    @contextmanager
    def measure(client: redis.Redis, path: str, units: int, out: list[Budget]) -> Iterator[None]:
        total: list[int] = []
        with server.count(total):
            yield
        row = next(r for r in out if r.path == path)
        row.instructions = total[0] / units

    return measure


def _deltas(n: int, threads: int, seed: int, prefix: str) -> list[Delta]:
    rng = random.Random(seed)
    return [Delta(f"{prefix}{i % threads}", [message_dict(i, rng)]) for i in range(n)]


def _paths(url: str, n: int, out: list[Budget], measure: Measure, failed: list[Check]) -> None:
    client = redis.Redis.from_url(url)
    for commits in (True, False):
        settings = in_process_settings(url, ingest_commits=commits)
        store = Store(sync_client(url, cluster=False), settings.keyspace)
        producer = Producer(store.client, settings, NullWaker())
        deltas = _deltas(n, max(1, n // 4), 1, f"one{int(commits)}-")
        name = "one call a delta, " + ("committed by the ingest call" if commits
                                       else "for a worker: the ingest")
        with measure(client, name, n, out):
            for d in deltas:
                producer.enqueue_many([d])
        if not commits:
            with measure(client, "one call a delta, for a worker: the commit", n, out):
                _drain(store, settings, {d.thread_id for d in deltas})
        _check(store, deltas, name, failed)
    settings = in_process_settings(url)
    store = Store(sync_client(url, cluster=False), settings.keyspace)
    producer = Producer(store.client, settings, NullWaker())
    spread = _deltas(n, n // 10, 2, "spread-")  # each thread written ten times
    with measure(client, "spread bulk (500 threads a call)", n, out):
        for at in range(0, n, BULK):
            producer.enqueue_many(spread[at : at + BULK])
    _check(store, spread, "spread", failed)
    headline = _deltas(n, 10, 3, "head-")
    with measure(client, "headline bulk (10 threads a call), ingest and commit", n, out):
        for at in range(0, n, BULK):
            producer.enqueue_many(headline[at : at + BULK])
        _drain(store, settings, {d.thread_id for d in headline})
    _check(store, headline, "headline", failed)
    _reads(client, store, producer, settings, reads=max(50, n // 20), out=out,
           measure=measure)


def _check(store: Store, deltas: Sequence[Delta], name: str, failed: list[Check]) -> None:
    """Every thread of the path holds the ids sent to it, in order (a wrong fast path is
    a failure, not a figure)."""
    sent: dict[str, list[str]] = {}
    for d in deltas:
        sent.setdefault(d.thread_id, []).extend(m["id"] for m in d.messages)
    for thread_id, ids in list(sent.items())[:: max(1, len(sent) // 50)]:
        page = store.read_state(f"_/{thread_id}")
        got = [] if page is None else [m.id for m in page.messages]
        if got != ids:
            failed.append(Check(name, False, f"{thread_id}: {got[:3]}... != {ids[:3]}..."))
            return


def _drain(store: Store, settings: Settings, threads: set[str]) -> None:
    Drainer(store, settings).drain_many([f"_/{t}" for t in sorted(threads)],
                                        time.monotonic() + 600)


def _reads(client: redis.Redis, store: Store, producer: Producer, settings: Settings, *,
           reads: int, out: list[Budget], measure: Measure) -> None:
    rng = random.Random(4)
    producer.enqueue_many([Delta("read", [message_dict(i, rng) for i in range(100)])])
    _drain(store, settings, {"read"})
    with measure(client, "read state (100 messages)", reads, out):
        for _ in range(reads):
            store.read_state("_/read")
    with measure(client, "read context (4,000 tokens)", reads, out):
        for _ in range(reads):
            store.read_context("_/read", "last", 4000)


def _floor(url: str, n: int, out: list[Budget], measure: Measure = _measured) -> None:
    client = redis.Redis.from_url(url)
    rng = random.Random(5)
    payloads = [str(message_dict(i, rng)).encode() for i in range(n)]
    with measure(client, "floor: pipelined XADD + HSET", n, out):
        for at in range(0, n, 100):
            pipe = client.pipeline(transaction=False)
            for i, p in enumerate(payloads[at : at + 100], start=at):
                pipe.xadd(f"floor:{i % 1000}", {"d": p})
                pipe.hset(f"floor:v:{i % 1000}", "v", i)
            pipe.execute()


def report(rows: Sequence[Budget]) -> str:
    floor = next(r for r in rows if r.path.startswith("floor"))
    lines = [
        "| path | per | script calls | commands | server µs (commandstats) | "
        "Redis CPU µs | x floor (CPU) | by script, server µs |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        per = "read" if r.path.startswith("read") else "delta"
        scripts = ", ".join(f"{k} {v:.1f}" for k, v in sorted(r.by_script_us.items(),
                                                                key=lambda kv: -kv[1]))
        lines.append(
            f"| {r.path} | {per} | {r.script_calls:.3f} | {r.commands:.1f} | "
            f"{r.server_us:.1f} | {r.redis_cpu_us:.1f} | "
            f"{r.redis_cpu_us / floor.redis_cpu_us:.1f} | {scripts or '-'} |"
        )
    counted = {r.path: r.instructions for r in rows if r.instructions}
    if len(counted) == len(rows):
        base = counted[floor.path]
        lines += ["", "Instructions the server runs a delta (a read), under callgrind "
                  "(thousands; x floor):", ""]
        lines += [f"- {p}: {i / 1000:.1f}k ({i / base:.1f}x)" for p, i in counted.items()]
    lines += ["", "Commands a delta (a read), by name:", ""]
    for r in rows:
        top = sorted(r.by_command.items(), key=lambda kv: -kv[1])
        lines.append(f"- {r.path}: " + ", ".join(f"{k} {v:.2f}" for k, v in top if v >= 0.01))
    return "\n".join(lines)


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--instructions", action="store_true",
        help="also count the server's instructions on every path under callgrind "
             f"(Debian's valgrind; {COUNTED[0]:,} deltas a path, {COUNTED[1]:,} with --quick)")


def main(argv: Sequence[str] | None = None) -> int:
    begun = cli.begin("redis", __doc__, "2,000 deltas a path instead of 20,000", argv,
                      full=20_000, quick=2_000, options=_options)
    n = begun.sizes
    out_path = cli.out_path("redis", begun.args)
    rows: list[Budget] = []
    failed: list[Check] = []
    for measure in (_measured, _attributed):  # the figures, then the scripts' shares
        with services.redis_server() as server:
            _paths(server.url, n, rows, measure, failed)
    with services.redis_server() as server:
        _floor(server.url, n, rows)
    if begun.args.instructions:
        counted = COUNTED[1] if begun.args.quick else COUNTED[0]
        with CountedRedis() as slow:
            _paths(slow.url, counted, rows, _counted(slow), failed)
        with CountedRedis() as slow:
            _floor(slow.url, counted, rows, _counted(slow))
    text = report(rows)
    data = {"deltas": n, "meta": begun.facts(),
            "rows": [asdict(r) for r in rows]}
    data["failures"] = [c.detail for c in failed]
    return cli.finish(out_path, data, text, failed)

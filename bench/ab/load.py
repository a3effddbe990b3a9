"""A fixed closed-loop HTTP load: ``requests`` requests over ``connections`` keep-alive
connections, each connection sending its next request when the last answer arrived.

Closed loop and a fixed number of requests, not a fixed time, so both sides of the A/B
answer exactly the same requests and the CPU each spent is divided by the same count
(wrk's runs are timed and are not on every machine: ``apt-get install wrk``). Raw asyncio
protocols on uvloop with prebuilt request bytes, as :mod:`bench.http.paced` does; POST
bodies are that generator's (:func:`bench.http.paced.post_request`), GETs read
``/threads/<prefix><i mod ids>/state`` round-robin.

Run as ``python -m bench.ab.load --port P --kind post|get --prefix X --ids N --requests
R --connections C``: one ``LOADJSON {...}`` line on stdout. :func:`run` starts it as a
child, reads its own CPU from the kernel (``wait4``) and returns what wrk's runs return
(:class:`bench.http.wrk.WrkResult`), so the HTTP benchmark's run accounting applies.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from bench.http.paced import HOST, AnswerReader, post_request
from bench.http.wrk import WrkResult, run_child

_LOST = 0  # the status of a request whose connection was lost


def get_request(port: int, prefix: str, ids: int) -> Callable[[int], bytes]:
    """Request ``i``: GET the state of thread ``<prefix><i mod ids>``."""
    tail = f" HTTP/1.1\r\nHost: {HOST}:{port}\r\n\r\n".encode()

    def build(i: int) -> bytes:
        return b"GET /threads/%s%d/state" % (prefix.encode(), i % ids) + tail

    return build


class _Conn(AnswerReader):
    """One keep-alive connection; one request in flight at a time."""

    def __init__(self, load: _Load) -> None:
        super().__init__()
        self.load = load
        self.busy = False

    def answered(self, status: int, size: int) -> None:
        self.load.answered(self, status, size)

    def lost(self) -> None:
        self.load.lost(self)


class _Load:
    """The closed loop: ``total`` requests, the next one sent on each answer."""

    def __init__(self, build: Callable[[int], bytes], total: int) -> None:
        self.loop = asyncio.get_running_loop()
        self.build = build
        self.total = total
        self.next = 0
        self.completed = 0
        self.bytes = 0
        self.statuses: Counter[int] = Counter()
        self.latency: list[float] = []
        self.first = self.last = 0.0
        self.all_done: asyncio.Future[None] = self.loop.create_future()

    def send(self, conn: _Conn) -> None:
        if self.next >= self.total or conn.transport is None or conn.transport.is_closing():
            return
        i, self.next = self.next, self.next + 1
        conn.busy, conn.sent = True, time.perf_counter()
        conn.transport.write(self.build(i))

    def _count(self, status: int) -> None:
        self.statuses[status] += 1
        self.completed += 1
        if self.completed == self.total and not self.all_done.done():
            self.all_done.set_result(None)

    def answered(self, conn: _Conn, status: int, size: int) -> None:
        now = time.perf_counter()  # the loop's clock counts milliseconds
        conn.busy = False
        self.latency.append(now - conn.sent)
        self.bytes += size
        self.last = now
        self._count(status)
        self.send(conn)

    def lost(self, conn: _Conn) -> None:
        if conn.busy:
            conn.busy = False
            self._count(_LOST)


def _percentile(ordered: Sequence[float], q: float) -> float:
    if not ordered:
        return 0.0
    return ordered[max(math.ceil(q * len(ordered)) - 1, 0)] * 1000


async def generate(port: int, build: Callable[[int], bytes], *, requests: int,
                   connections: int, timeout: float) -> dict[str, Any]:
    """Send ``requests`` requests, closed loop; give up ``timeout`` s after the start."""
    load = _Load(build, requests)
    conns = []
    for _ in range(min(connections, requests)):
        _, proto = await load.loop.create_connection(lambda: _Conn(load), HOST, port)
        conns.append(proto)
    load.first = time.perf_counter()
    for conn in conns:
        load.send(conn)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.shield(load.all_done), timeout)
    for conn in conns:
        if conn.transport is not None:
            conn.transport.close()
    ordered = sorted(load.latency)
    answered = len(ordered)
    return {
        "requests": requests, "answered": answered, "lost": load.statuses.get(_LOST, 0),
        "unfinished": requests - load.completed, "bytes": load.bytes,
        "seconds": max(load.last - load.first, 1e-9) if answered else 0.0,
        "statuses": {str(k): v for k, v in sorted(load.statuses.items())},
        "connections": len(conns),
        "latency_ms": {"p50": _percentile(ordered, 0.5), "p90": _percentile(ordered, 0.9),
                       "p99": _percentile(ordered, 0.99), "p999": _percentile(ordered, 0.999),
                       "max": _percentile(ordered, 1.0),
                       "mean": sum(ordered) / answered * 1000 if answered else 0.0},
    }


def _result(raw: dict[str, Any], cpu_s: float) -> WrkResult:
    statuses = {int(k): int(v) for k, v in raw["statuses"].items()}
    lat = raw["latency_ms"]
    return WrkResult(
        requests=int(raw["answered"]), seconds=float(raw["seconds"]), bytes=int(raw["bytes"]),
        socket_errors={"connect": 0, "read": int(raw["lost"]), "write": 0,
                       "timeout": int(raw["unfinished"])},
        non_2xx=sum(n for s, n in statuses.items() if s and not 200 <= s < 300),
        p50_ms=lat["p50"], p90_ms=lat["p90"], p99_ms=lat["p99"], p999_ms=lat["p999"],
        max_ms=lat["max"], mean_ms=lat["mean"], cpu_s=cpu_s,
        connections=int(raw["connections"]), threads=1)


def run(port: int, *, kind: str, prefix: str, ids: int, requests: int, connections: int,
        timeout: float = 300.0) -> WrkResult:
    """One closed-loop run in a child process (``kind``: ``post`` or ``get``)."""
    argv = [sys.executable, "-m", "bench.ab.load", "--port", str(port), "--kind", kind,
            "--prefix", prefix, "--ids", str(ids), "--requests", str(requests),
            "--connections", str(connections), "--timeout", str(timeout)]
    started = time.perf_counter()
    code, text, cpu = run_child(argv, timeout=timeout + 60)
    if code != 0:
        raise RuntimeError(f"the load generator exited {code}:\n{text[-2000:]}")
    for line in text.splitlines():
        if line.startswith("LOADJSON "):
            return _result(json.loads(line.removeprefix("LOADJSON ")), cpu)
    raise RuntimeError(f"the load generator printed no result after "
                       f"{time.perf_counter() - started:.1f}s:\n{text[-2000:]}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ab.load")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--kind", choices=("post", "get"), required=True)
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--ids", type=int, required=True)
    parser.add_argument("--requests", type=int, required=True)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--timeout", type=float, default=300.0)
    args = parser.parse_args(argv)
    make = post_request if args.kind == "post" else get_request
    coro = generate(args.port, make(args.port, args.prefix, args.ids), requests=args.requests,
                    connections=args.connections, timeout=args.timeout)
    try:
        import uvloop  # noqa: PLC0415  # the server's loop; plain asyncio without it
    except ImportError:  # pragma: no cover
        result: dict[str, Any] = asyncio.run(coro)
    else:
        result = uvloop.run(coro)
    print("LOADJSON " + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A paced (open-loop) HTTP load generator: requests leave on a fixed schedule.

wrk (Debian's 4.1) cannot pace: each connection sends its next request only when the
last answer arrived, so a slow server is simply sent less, and its latencies hide the
queueing an open stream of users would see ("coordinated omission"). This generator
sends request ``i`` at ``t0 + i / rate`` whatever the server does, over a pool of
keep-alive connections (one request in flight per connection, as HTTP/1.1 without
pipelining allows); when every connection is busy the request waits in the generator,
and that wait counts. Latency is measured from the *scheduled* send time (as wrk2 does)
and, separately, from the actual send ("service" time).

It is raw asyncio protocols on uvloop with prebuilt request bytes, a few tens of
microseconds of CPU per request, so it can pace a few thousand requests per second
while sharing two cores with the server; its own CPU time is reported beside it.

Run as ``python -m bench.http.paced --port P --rate R --seconds S ...``: one
``PACEDJSON {...}`` line on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import sys
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from bench.http.wrk import MESSAGE, pinned, run_child

HOST = "127.0.0.1"
_LOST = 0  # status recorded for a request whose connection was lost


def post_request(port: int, prefix: str, ids: int) -> Callable[[int], bytes]:
    """Request ``i``: POST one message to thread ``<prefix><i mod ids>``."""
    body = ('{"messages":[' + MESSAGE + "]}").encode()
    head = (f"Host: {HOST}:{port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode()

    def build(i: int) -> bytes:
        return b"POST /threads/%s%d/deltas HTTP/1.1\r\n" % (prefix.encode(), i % ids) + head + body

    return build


def get_request(port: int, path: str) -> Callable[[int], bytes]:
    raw = f"GET {path} HTTP/1.1\r\nHost: {HOST}:{port}\r\n\r\n".encode()
    return lambda i: raw


def content_length(head: bytes) -> int:
    """An answer head's Content-Length (0 when it has none)."""
    lower = head.lower()
    at = lower.find(b"\r\ncontent-length:")
    if at < 0:
        return 0
    start = at + len(b"\r\ncontent-length:")
    end = lower.find(b"\r\n", start)
    return int(lower[start : end if end >= 0 else len(lower)])


class AnswerReader(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection, read answer by answer (each whole, by its
    Content-Length): a load generator's, which says what to do with each through
    :meth:`answered` and with a lost connection through :meth:`lost`."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.sent = 0.0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass

    def data_received(self, data: bytes) -> None:
        self.buf += data
        end = self.buf.find(b"\r\n\r\n")
        if end < 0:
            return
        head = bytes(self.buf[:end])
        total = end + 4 + content_length(head)
        if len(self.buf) < total:
            return
        del self.buf[:total]
        self.answered(int(head[9:12]), total)

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost()

    def answered(self, status: int, size: int) -> None:
        raise NotImplementedError

    def lost(self) -> None:
        raise NotImplementedError


class _Conn(AnswerReader):
    """One keep-alive connection; at most one request in flight."""

    def __init__(self, gen: _Generator) -> None:
        super().__init__()
        self.gen = gen
        self.index = -1

    def answered(self, status: int, size: int) -> None:
        self.gen.finished(self, status)

    def lost(self) -> None:
        self.gen.lost(self)


class _Generator:
    def __init__(self, build: Callable[[int], bytes], total: int, rate: float) -> None:
        self.loop = asyncio.get_running_loop()
        self.build = build
        self.total = total
        self.rate = rate
        self.t0 = 0.0
        self.latency = [math.inf] * total
        self.service = [math.inf] * total
        self.statuses: Counter[int] = Counter()
        self.idle: deque[_Conn] = deque()
        self.waiting: deque[int] = deque()
        self.completed = 0
        self.last_done = 0.0
        self.max_lag = 0.0
        self.all_done: asyncio.Future[None] = self.loop.create_future()

    def due(self, i: int) -> float:
        return self.t0 + i / self.rate

    def send(self, conn: _Conn, i: int) -> None:
        now = self.loop.time()
        self.max_lag = max(self.max_lag, now - self.due(i))
        conn.index, conn.sent = i, now
        assert conn.transport is not None
        conn.transport.write(self.build(i))

    def submit(self, i: int) -> None:
        if self.idle:
            self.send(self.idle.popleft(), i)
        else:
            self.waiting.append(i)

    def _record(self, i: int, status: int, now: float, sent: float) -> None:
        self.latency[i] = now - self.due(i)
        self.service[i] = now - sent
        self.statuses[status] += 1
        self.completed += 1
        self.last_done = now
        if self.completed == self.total and not self.all_done.done():
            self.all_done.set_result(None)

    def finished(self, conn: _Conn, status: int) -> None:
        i, conn.index = conn.index, -1
        self._record(i, status, self.loop.time(), conn.sent)
        if self.waiting:
            self.send(conn, self.waiting.popleft())
        else:
            self.idle.append(conn)

    def lost(self, conn: _Conn) -> None:
        with contextlib.suppress(ValueError):
            self.idle.remove(conn)
        if conn.index >= 0:
            i, conn.index = conn.index, -1
            self.statuses[_LOST] += 1
            self.completed += 1
            self.latency[i] = self.service[i] = math.inf
            if self.completed == self.total and not self.all_done.done():
                self.all_done.set_result(None)


def _percentiles(values: Sequence[float]) -> dict[str, float | None]:
    """p50 .. max in milliseconds; None where the request never finished."""
    ordered = sorted(values)
    out: dict[str, float | None] = {}
    for name, q in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p999", 0.999), ("max", 1.0)):
        v = ordered[max(math.ceil(q * len(ordered)) - 1, 0)] if ordered else math.inf
        out[name] = None if math.isinf(v) else round(v * 1000, 3)
    return out


async def generate(port: int, build: Callable[[int], bytes], *, rate: float, seconds: float,
                   connections: int, grace: float) -> dict[str, Any]:
    """Send ``rate * seconds`` requests on schedule; wait up to ``grace`` s for the last."""
    total = max(int(rate * seconds), 1)
    gen = _Generator(build, total, rate)
    conns = []
    for _ in range(connections):
        _, proto = await gen.loop.create_connection(lambda: _Conn(gen), HOST, port)
        conns.append(proto)
    gen.idle.extend(conns)
    gen.t0 = gen.loop.time() + 0.01
    burst = 0
    for i in range(total):
        wait = gen.due(i) - gen.loop.time()
        if wait > 0.0002:
            burst = 0
            await asyncio.sleep(wait)
        elif burst >= 16:  # behind schedule: still let answers in between sends
            burst = 0
            await asyncio.sleep(0)
        burst += 1
        gen.submit(i)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.shield(gen.all_done), grace)
    for conn in conns:
        if conn.transport is not None:
            conn.transport.close()
    span = (gen.last_done - gen.t0) if gen.completed else 0.0
    return {
        "rate": rate, "seconds": seconds, "scheduled": total, "completed": gen.completed,
        "unfinished": total - gen.completed,
        "statuses": {str(k): v for k, v in sorted(gen.statuses.items())},
        "span_s": round(span, 4),
        "achieved_rate": gen.completed / span if span > 0 else 0.0,
        "max_send_lag_ms": round(gen.max_lag * 1000, 3),
        "connections": connections,
        "latency_ms": _percentiles(gen.latency),
        "service_ms": _percentiles(gen.service),
        # Over the answered requests only (what an overloaded run's answers looked like).
        "answered_latency_ms": _percentiles([v for v in gen.latency if not math.isinf(v)]),
        "answered_service_ms": _percentiles([v for v in gen.service if not math.isinf(v)]),
    }


def _run(coro: Any) -> dict[str, Any]:
    try:
        import uvloop  # noqa: PLC0415  # the server's loop; plain asyncio without it
    except ImportError:  # pragma: no cover
        result: dict[str, Any] = asyncio.run(coro)
        return result
    out: dict[str, Any] = uvloop.run(coro)
    return out


@dataclass(frozen=True)
class PacedResult:
    """One paced run, as the child reported it, plus its CPU time."""

    raw: dict[str, Any]
    cpu_s: float

    @property
    def scheduled(self) -> int:
        return int(self.raw["scheduled"])

    @property
    def completed(self) -> int:
        return int(self.raw["completed"])

    @property
    def statuses(self) -> dict[int, int]:
        return {int(k): int(v) for k, v in self.raw["statuses"].items()}

    def ok_count(self, status: int) -> int:
        return self.statuses.get(status, 0)

    @property
    def achieved_rate(self) -> float:
        return float(self.raw["achieved_rate"])

    def latency(self, name: str) -> float | None:
        """From the scheduled send, ms (None: some requests never finished)."""
        value = self.raw["latency_ms"][name]
        return None if value is None else float(value)

    def service(self, name: str) -> float | None:
        value = self.raw["service_ms"][name]
        return None if value is None else float(value)

    def answered(self, kind: str, name: str) -> float | None:
        """A percentile over the answered requests only: ``kind`` latency or service."""
        value = self.raw[f"answered_{kind}_ms"][name]
        return None if value is None else float(value)

    @property
    def cpu_share(self) -> float:
        span = float(self.raw["span_s"]) or float(self.raw["seconds"])
        return self.cpu_s / span if span else 0.0


def run_paced(port: int, *, prefix: str, ids: int, rate: float, seconds: float,
              connections: int = 64, grace: float = 3.0, cpus: str | None = None) -> PacedResult:
    """POST one message per request to ``ids`` threads at ``rate``/s, in a child process."""
    argv = [sys.executable, "-m", "bench.http.paced", "--port", str(port), "--prefix",
            prefix, "--ids", str(ids), "--rate", str(rate), "--seconds", str(seconds),
            "--connections", str(connections), "--grace", str(grace)]
    code, text, cpu = run_child(pinned(argv, cpus), timeout=seconds + grace + 60)
    if code != 0:
        raise RuntimeError(f"paced generator exited {code}:\n{text[-2000:]}")
    for line in text.splitlines():
        if line.startswith("PACEDJSON "):
            return PacedResult(json.loads(line.removeprefix("PACEDJSON ")), cpu)
    raise RuntimeError(f"paced generator printed no result:\n{text[-2000:]}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.http.paced")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--prefix", default="paced-")
    parser.add_argument("--ids", type=int, default=10_000)
    parser.add_argument("--rate", type=float, required=True)
    parser.add_argument("--seconds", type=float, required=True)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--grace", type=float, default=3.0)
    parser.add_argument("--get", default=None, help="GET this path instead of posting")
    args = parser.parse_args(argv)
    build = (get_request(args.port, args.get) if args.get
             else post_request(args.port, args.prefix, args.ids))
    result = _run(generate(args.port, build, rate=args.rate, seconds=args.seconds,
                           connections=args.connections, grace=args.grace))
    print("PACEDJSON " + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

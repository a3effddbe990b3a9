"""A subscriber process: many SSE subscriptions on one asyncio loop (uvloop when
installed), each keeping its thread's messages by the feed's rule (position -> message,
as :mod:`threadfold.workers.feed.apply`) and stamping every change it receives.

Each stream parses its snapshot at once and keeps what follows unparsed, with its
arrival times, until the run is over (:mod:`bench.live.reader`): the run's subscribers
cost the two cores only their reads while the latency is measured.

The parent talks over a pipe: the process opens its subscriptions and answers
``ready`` once each holds its first snapshot; on ``finish`` (each thread's final
version) it waits until every subscription has reached its thread's and says so
(``reached``: the run's CPU window ends there); asked again, it answers with a digest
of each subscription's messages (compared with ``GET state`` by the parent),
every change's receive time, and what went wrong (reconnects, errors, snapshots after
the first, chain breaks). A subscription whose stream ends (the server's ``too_slow``,
a dropped connection) reopens it with ``Last-Event-ID``, as the clients do.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from array import array
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any, Final

import msgspec

from bench.live.reader import SseEvent, SseProtocol, request
from threadfold.workers.feed.apply import apply_in_place, in_order


class _Removed(msgspec.Struct):
    position: int


class _Upsert(msgspec.Struct):
    position: int
    message: msgspec.Raw


class _Change(msgspec.Struct):
    """The part of ``event: change`` a follower applies (the endpoint's wire form),
    its messages kept as their JSON (decoded once, for the final comparison): decoding
    every message of every event into dicts was most of the subscribers' CPU."""

    version: str
    prev: str
    reset: bool
    removed: list[_Removed]
    upserts: list[_Upsert]


class _Snapshot(msgspec.Struct):
    version: str
    reason: str
    messages: list[msgspec.Raw]
    positions: list[int]


_SNAPSHOT: Final = msgspec.json.Decoder(_Snapshot)
_CHANGE: Final = msgspec.json.Decoder(_Change)
_RAW: Final = msgspec.json.Decoder()
#: Reads a stream parses at most before the loop may stamp what else came (~1 ms).
_SLICE: Final = 100
#: Streams opened at once while starting (the API accepts a burst of connections).
_OPENING: Final = 50


def version_key(version: str) -> int:
    """A version (``<ms>-<seq>``) as one integer that orders like it."""
    ms, _, seq = version.partition("-")
    return int(ms) << 20 | int(seq or 0)


def digest(messages: Sequence[Any]) -> str:
    """What two message lists are compared by: their JSON with keys sorted, hashed."""
    return hashlib.sha256(msgspec.json.encode(messages, order="sorted")).hexdigest()


@dataclass
class Subscription:
    """One subscriber of one thread."""

    thread: int
    path: str
    version: str | None = None
    state: dict[int, msgspec.Raw] = field(default_factory=dict)
    keys: array[int] = field(default_factory=lambda: array("q"))
    times: array[float] = field(default_factory=lambda: array("d"))
    snapshots: Counter[str] = field(default_factory=Counter)
    ends: Counter[str] = field(default_factory=Counter)
    chain_breaks: int = 0
    open: bool = False
    stream: SseProtocol | None = None  # the open stream (its reads may wait unparsed)

    @property
    def messages(self) -> list[Any]:
        """The messages held, decoded, in order."""
        return [_RAW.decode(m) for m in in_order(self.state)]

    def take(self, event: SseEvent) -> str | None:
        """Apply ``event``; a reason to reopen the stream, or None."""
        if event.kind == b"change":
            change = _CHANGE.decode(event.data)
            if change.prev != self.version:
                self.chain_breaks += 1
                return "chain break"
            # in place: apply() copies the map, O(messages) an event
            apply_in_place(
                self.state,
                reset=change.reset,
                removed=(gone.position for gone in change.removed),
                upserts=((upsert.position, upsert.message) for upsert in change.upserts),
            )
            self.version = change.version
            self.keys.append(version_key(change.version))
            self.times.append(event.at)
        elif event.kind == b"snapshot":
            snapshot = _SNAPSHOT.decode(event.data)
            self.snapshots[snapshot.reason] += 1
            self.state = dict(zip(snapshot.positions, snapshot.messages, strict=True))
            self.version = snapshot.version
        elif event.kind == b"error":
            return "error " + event.data.decode()[:200]
        return None


class Client:
    """Every subscription of this process, on one loop."""

    def __init__(self, host: str, port: int, subs: list[Subscription]) -> None:
        self.host, self.port, self.subs = host, port, subs
        self.loop = asyncio.get_running_loop()
        self.reopened = 0

    async def open(self, sub: Subscription) -> None:
        message = request(self.host, self.port, sub.path, sub.version)
        stream: SseProtocol | None = None

        def on_event(event: SseEvent) -> None:
            why = sub.take(event)
            if why is not None and stream is not None:
                stream._end(why)  # ends this stream; on_end reopens

        def on_end(why: str) -> None:
            sub.open = False
            sub.ends[why.split(":", maxsplit=1)[0][:40]] += 1
            self.reopened += 1
            self.loop.call_later(0.2, lambda: asyncio.ensure_future(self.open(sub)))

        try:
            _, stream = await self.loop.create_connection(
                lambda: SseProtocol(message, on_event, on_end), self.host, self.port)
            sub.open, sub.stream = True, stream
        except OSError as exc:
            on_end(f"connect: {exc}")

    async def start(self) -> None:
        gate = asyncio.Semaphore(_OPENING)

        async def one(sub: Subscription) -> None:
            async with gate:
                await self.open(sub)
                while sub.version is None:
                    await asyncio.sleep(0.01)

        await asyncio.gather(*(one(s) for s in self.subs))

    async def reach(self, finals: dict[int, str], timeout: float) -> float:
        """Seconds until every subscription holds its thread's final version."""
        began = time.perf_counter()
        while time.perf_counter() - began < timeout:
            # The reads kept during the run (reader.py), parsed now, a slice at a time.
            left = True
            while left:
                left = False
                for s in self.subs:
                    if s.stream is not None and s.stream.flush(_SLICE):
                        left = True
                    await asyncio.sleep(0)
            if all(s.version == finals[s.thread] for s in self.subs):
                break
            await asyncio.sleep(0.05)
        return time.perf_counter() - began


def _answer(client: Client, waited: float, cpu: float) -> dict[str, Any]:
    subs = client.subs
    snapshots: Counter[str] = Counter()
    ends: Counter[str] = Counter()
    for s in subs:
        snapshots.update(s.snapshots)
        ends.update(s.ends)
    return {
        "subscriptions": [(s.thread, s.version, digest(s.messages))
                          for s in subs],
        "threads": array("H", [s.thread for s in subs for _ in s.keys]),
        "keys": array("q", [k for s in subs for k in s.keys]),
        "times": array("d", [t for s in subs for t in s.times]),
        "snapshots": dict(snapshots), "ends": dict(ends),
        "chain_breaks": sum(s.chain_breaks for s in subs),
        "reopened": client.reopened, "waited": waited, "cpu": cpu,
    }


async def _serve(host: str, port: int, subs: list[Subscription], conn: Connection) -> None:
    client = Client(host, port, subs)
    await client.start()
    conn.send(("ready", len(subs)))
    while not conn.poll():
        await asyncio.sleep(0.05)
    finals, timeout = conn.recv()
    waited = await client.reach(finals, timeout)
    cpu = time.process_time()
    # The parent reads every process's CPU now: the digests below are the check's work,
    # not the subscriptions'.
    conn.send(("reached", waited))
    conn.recv()
    conn.send(_answer(client, waited, cpu))


def run(host: str, port: int, threads: Sequence[tuple[int, str]], conn: Connection) -> None:
    """The process's body: one subscription per ``(thread index, thread id)``."""
    subs = [Subscription(i, f"/threads/{tid}/events") for i, tid in threads]
    try:
        import uvloop  # noqa: PLC0415  # installed with uvicorn[standard]
    except ImportError:
        asyncio.run(_serve(host, port, subs, conn))
        return
    uvloop.run(_serve(host, port, subs, conn))

"""A lean Server-Sent Events reader for the benchmark's 1,000 subscribers: an asyncio
Protocol over a plain socket (HTTP/1.1, chunked), no HTTP library.

Why not httpx: a subscriber's cost in the benchmark's own processes competes with the
API for this machine's two cores; an ``asyncio.Protocol`` parses what arrives in
``data_received`` without a coroutine per chunk, so the client's CPU stays a small part
of what is measured (and is reported). It handles exactly what the endpoint sends: a
status line and headers, a chunked body, events as ``field: value`` lines ending in a
blank line (``\\n``), comment lines (heartbeats) ignored.

Deferred parsing: once a stream has delivered its first event (the snapshot), what
arrives is kept as (arrival time, bytes) and parsed only when :meth:`SseProtocol.flush`
is called, or when the stream ends. The arrival times are the same as parsing at once
would give (an event's time is that of the read that completed it); what moves is the
parsing's CPU, out of the window in which the API's latency is measured: on this
machine's two cores the benchmark's own subscribers otherwise take a fifth of them.
"""

from __future__ import annotations

import asyncio
import time
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, cast

_HEAD_END: Final = b"\r\n\r\n"


@dataclass(frozen=True, slots=True)
class SseEvent:
    """One event: its ``event:``, ``id:`` and ``data:`` (bytes, lines joined by \\n), and
    the time (``time.time()``) its last bytes arrived."""

    kind: bytes
    id: bytes | None
    data: bytes
    at: float


OnEvent = Callable[[SseEvent], None]
OnEnd = Callable[[str], None]


def request(host: str, port: int, path: str, last_id: str | None) -> bytes:
    head = [f"GET {path} HTTP/1.1", f"Host: {host}:{port}", "Accept: text/event-stream",
            "Cache-Control: no-cache"]
    if last_id is not None:
        head.append(f"Last-Event-ID: {last_id}")
    return ("\r\n".join(head) + "\r\n\r\n").encode()


class SseProtocol(asyncio.Protocol):
    """One stream: ``on_event`` per event, ``on_end`` once with why it ended (``eof``,
    ``status <n>``, ``lost: ...``)."""

    def __init__(self, message: bytes, on_event: OnEvent, on_end: OnEnd) -> None:
        self.message = message
        self.on_event = on_event
        self.on_end = on_end
        self.transport: asyncio.Transport | None = None
        self.head: bytes | None = None
        self.raw = b""  # bytes not yet parsed as head or chunk framing
        self.body = b""  # de-chunked bytes not yet parsed as events
        self.need = -1  # payload bytes left in the current chunk; -1: a size line next
        self.crlf = 0  # bytes of the CRLF after the payload still to skip
        self.ended = False
        self.delivered = False  # an event was parsed: what comes next may be deferred
        # Reads not parsed yet, and their arrival times: no tuple per read, as millions
        # of them made the cyclic collector stop the process for seconds.
        self.pending: list[bytes] = []
        self.pending_at = array("d")
        self.tail = b""  # the last bytes kept: where the body's end is looked for

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, but have its methods
        self.transport = cast(asyncio.Transport, transport)
        self.transport.write(self.message)

    def data_received(self, data: bytes) -> None:
        at = time.time()
        if self.delivered:
            self.pending.append(data)
            self.pending_at.append(at)
            # The chunked body's last chunk, however the reads split it: the server ended
            # the stream (an error event before it). An event's chunk ends in "\n\n\r\n".
            self.tail = (self.tail + data[-5:])[-5:]
            if self.tail == b"0\r\n\r\n":
                self.flush()
            return
        self._parse(at, data)

    def flush(self, most: int | None = None) -> bool:
        """Parse what was kept (the first ``most`` reads, or all), each read with its
        own arrival time; whether any is left. In slices, the loop stays free to stamp
        what still arrives: a whole process's backlog parsed at once stopped it for
        seconds and made the last events late."""
        take = len(self.pending) if most is None else min(most, len(self.pending))
        pending, times = self.pending[:take], self.pending_at[:take]
        del self.pending[:take], self.pending_at[:take]
        for at, data in zip(times, pending, strict=True):
            if self.ended:
                break
            self._parse(at, data)
        return bool(self.pending)

    def _parse(self, at: float, data: bytes) -> None:
        self.raw += data
        if self.head is None:
            end = self.raw.find(_HEAD_END)
            if end < 0:
                return
            self.head, self.raw = self.raw[:end], self.raw[end + 4:]
            status = self.head.split(b" ", 2)[1]
            if status != b"200":
                self._end(f"status {status.decode()}")
                return
        self._dechunk()
        self._events(at)

    def _dechunk(self) -> None:
        """Move whole or partial chunk payloads from ``raw`` to ``body``."""
        raw, out, at = self.raw, [], 0
        while not self.ended:
            if self.need < 0:  # a size line
                line_end = raw.find(b"\r\n", at)
                if line_end < 0:
                    break
                size = int(raw[at:line_end].split(b";", 1)[0], 16)
                at = line_end + 2
                if size == 0:
                    self._end("eof")
                    break
                self.need, self.crlf = size, 2
            if self.need > 0:
                take = min(self.need, len(raw) - at)
                out.append(raw[at:at + take])
                at += take
                self.need -= take
                if self.need > 0:
                    break
            skip = min(self.crlf, len(raw) - at)  # the CRLF after a chunk's payload
            at += skip
            self.crlf -= skip
            if self.crlf > 0:
                break
            self.need = -1
        self.raw = raw[at:]
        self.body += b"".join(out)

    def _events(self, at: float) -> None:
        body, start = self.body, 0
        while True:
            end = body.find(b"\n\n", start)
            if end < 0:
                break
            self._event(body[start:end], at)
            start = end + 2
        self.body = body[start:]

    def _event(self, block: bytes, at: float) -> None:
        kind, ident, data = b"message", None, []
        for line in block.split(b"\n"):
            if not line or line[0] == 58:  # ':' a comment (heartbeat)
                continue
            name, _, value = line.partition(b":")
            value = value[1:] if value[:1] == b" " else value
            if name == b"data":
                data.append(value)
            elif name == b"event":
                kind = value
            elif name == b"id":
                ident = value
        if data:
            self.delivered = True
            self.on_event(SseEvent(kind, ident, b"\n".join(data), at))

    def _end(self, why: str) -> None:
        if not self.ended:
            self.ended = True
            self.on_end(why)
            if self.transport is not None:
                self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.flush()  # what came before the end, so that a reopening resumes after it
        self._end("eof" if exc is None else f"lost: {exc}")

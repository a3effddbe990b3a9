"""A connection's writes of one event-loop turn sent as one.

uvicorn's HTTP protocol writes a response's head when the app sends
``http.response.start`` and its body when it sends ``http.response.body``: two writes,
so two ``send`` system calls and two TCP segments for every small answer, where one
would do (the peer wakes once, the kernel runs its TCP path once). Under a load of
one-message POSTs the two writes were the API process's two hottest frames (9.6% and
7.4% of its samples, ``py-spy``). :class:`Corked` stands in for the connection's
transport: a write is held until the end of the loop's current turn, where every
write of the turn goes out as one. An app sends the head and the body of an answer in
the same turn (nothing it awaits between them suspends), so they leave together; a
streamed body's parts still leave as they are sent, a turn later at most. ``close``
sends what is held first; everything else is the transport's own.
"""

from __future__ import annotations

import asyncio
from typing import Any


class Corked:
    """``transport`` with the writes of each loop turn joined (see the module)."""

    __slots__ = ("_held", "_loop", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._held: list[bytes] = []

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not self._held:
            self._loop.call_soon(self._flush)
        self._held.append(bytes(data))

    def writelines(self, parts: Any) -> None:
        for part in parts:
            self.write(part)

    def _flush(self) -> None:
        held, self._held = self._held, []
        if held and not self._transport.is_closing():
            self._transport.write(held[0] if len(held) == 1 else b"".join(held))

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def write_eof(self) -> None:
        self._flush()
        self._transport.write_eof()

    def __getattr__(self, name: str) -> Any:  # the rest is the transport's own
        return getattr(self._transport, name)

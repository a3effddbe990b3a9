"""A request sent in one write: httpcore's streams, with writes held until the read.

httpcore writes an HTTP/1.1 request's head and its body apart: two ``send`` calls and
two TCP segments a call, and the server wakes for each. Every request the clients make
is written whole before its answer is read, so :class:`HeldStream` holds the writes
and sends them as one when the answer is first read (or when more than
:data:`HOLD_BYTES` are held: a large body is not copied whole). A write error shows
at that read, as the connection's error; the clients retry it as any lost connection.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterable
from typing import Any, Final

import httpcore

#: Bytes held at most: past this the held writes go out (a checkpoint's body can be MBs).
HOLD_BYTES: Final = 65_536


class HeldStream(httpcore.AsyncNetworkStream):
    """``stream`` with its writes sent together at the next read (see the module)."""

    def __init__(self, stream: httpcore.AsyncNetworkStream) -> None:
        self._stream = stream
        self._held: list[bytes] = []
        self._size = 0
        self._timeout: float | None = None

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._held.append(buffer)
        self._size += len(buffer)
        self._timeout = timeout
        if self._size > HOLD_BYTES:
            await self._send()

    async def _send(self) -> None:
        if self._held:
            data = self._held[0] if len(self._held) == 1 else b"".join(self._held)
            self._held, self._size = [], 0
            await self._stream.write(data, self._timeout)

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        await self._send()
        return await self._stream.read(max_bytes, timeout)

    async def aclose(self) -> None:
        self._held, self._size = [], 0
        await self._stream.aclose()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        await self._send()
        return HeldStream(await self._stream.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class HeldBackend(httpcore.AsyncNetworkBackend):
    """httpcore's own backend, its streams held (:class:`HeldStream`)."""

    def __init__(self) -> None:
        self._backend = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        stream = await self._backend.connect_tcp(host, port, timeout, local_address,
                                                 socket_options)
        return HeldStream(stream)

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.AsyncNetworkStream:
        return HeldStream(await self._backend.connect_unix_socket(path, timeout, socket_options))

    async def sleep(self, seconds: float) -> None:
        await self._backend.sleep(seconds)

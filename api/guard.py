"""The HTTP server's own limits: the size of a request head, its header count, and how
long a request may take to arrive.

uvicorn (0.54) with httptools has none of them. httptools (llhttp) reads a head of any
size with any number of headers, and uvicorn arms no timer while a request is being
read: its ``timeout_keep_alive`` runs only between requests, ``h11_max_incomplete_event_
size`` is for h11 alone, and ``limit_concurrency`` answers 503 to every client once
reached. A 32 MB header and 50,000 headers were read and answered 200; a head dribbled
a line at a time, or a body that stops short of its Content-Length, held a connection
open for good.

:class:`GuardedHttpToolsProtocol` is uvicorn's httptools protocol with those limits, per
connection, on the event loop: a request over a limit is answered with the API's JSON
error (431 or 408) and its connection closed; no other connection is touched.
"""

from __future__ import annotations

import asyncio
import functools
import http
import logging
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import msgspec
from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from threadfold.api.cork import Corked
from threadfold.api.settings import ApiSettings
from threadfold.core.errors import (
    BadRequest,
    HeadTooLarge,
    RequestError,
    RequestTimeout,
    ThreadfoldError,
)

log = logging.getLogger("threadfold.api")


@dataclass(frozen=True)
class HttpLimits:
    """What one request may take: head bytes (request line and headers), header count,
    seconds for its head to arrive, seconds for its body to arrive after the head."""

    max_header_bytes: int
    max_headers: int
    header_timeout: float
    body_timeout: float

    @classmethod
    def of(cls, settings: ApiSettings) -> HttpLimits:
        return cls(
            settings.max_header_bytes,
            settings.max_headers,
            settings.header_timeout_seconds,
            settings.body_timeout_seconds,
        )


def protocol(limits: HttpLimits) -> type[asyncio.Protocol]:
    """The ``http`` argument of ``uvicorn.run``: the guarded protocol with ``limits``.

    A partial, not a class made here: uvicorn pickles its configuration into each worker
    process it spawns, and a partial of a module-level class pickles by reference.
    """
    return cast(
        "type[asyncio.Protocol]", functools.partial(GuardedHttpToolsProtocol, limits=limits)
    )


#: What the process does when the server starts a graceful shutdown, before it waits for
#: the responses under way to end: a response that would never end by itself (an event
#: stream) ends itself here (threadfold.api.feed registers its hub). Weak references:
#: an app that is gone (a test's) leaves nothing behind.
_ON_SHUTDOWN: list[weakref.WeakMethod[Callable[[], None]]] = []


def on_shutdown(method: Callable[[], None]) -> None:
    """Call the bound ``method`` when the server starts shutting down."""
    _ON_SHUTDOWN[:] = [ref for ref in _ON_SHUTDOWN if ref() is not None]
    _ON_SHUTDOWN.append(weakref.WeakMethod(method))


class _Refused(ThreadfoldError):
    """Raised from a parser callback to stop parsing a request that broke a limit."""


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, with :class:`HttpLimits` enforced."""

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
        *,
        limits: HttpLimits,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.limits = limits
        self._in_head = True  # reading a request's head, or waiting for the next one
        self._begun = False  # the current request's first byte has come
        self._head_bytes = 0  # bytes received while reading the current head
        self._head_ended = False
        self._headers = 0
        self._timer: asyncio.TimerHandle | None = None
        self._refusal: RequestError | None = None  # set once a limit is broken

    # --- connection --------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        # A response's head and body leave in one write (threadfold.api.cork).
        super().connection_made(cast("asyncio.Transport", Corked(transport, self.loop)))
        # A connection that never sends a whole head is closed like one that sends a
        # slow one (uvicorn arms nothing before the first request).
        self._arm(self.limits.header_timeout, self._head_timed_out)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def shutdown(self) -> None:
        """uvicorn's graceful shutdown, for each open connection: long-lived responses
        are asked to end first (uvicorn would wait for them for ever)."""
        for ref in _ON_SHUTDOWN:
            method = ref()
            if method is not None:
                method()
        super().shutdown()

    def data_received(self, data: bytes) -> None:
        if self._refusal is not None:
            return  # lingering after a refusal (see _refuse): what still comes is dropped
        if self._in_head:
            room = self.limits.max_header_bytes - self._head_bytes
            if len(data) > room:
                # Parse only what the limit allows (httptools would hold all of a huge
                # header in memory): a head that has not ended within it is too large.
                self._head_ended = False
                super().data_received(data[:room])
                if self._refusal is not None or self.transport.is_closing():
                    return
                if not self._head_ended:
                    limit = self.limits.max_header_bytes
                    self._refuse(HeadTooLarge(f"the request head is over {limit} bytes"))
                    return
                # The rest is body, or a pipelined request whose head counts from the
                # next read on: pipelining can overshoot the limit by one read, no more.
                data = data[room:]
            else:
                self._head_bytes += len(data)
        super().data_received(data)

    # --- parser callbacks ------------------------------------------------------------

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._begun, self._headers = True, 0
        if self._timer is None:  # the first byte of a request after an idle keep-alive
            self._arm(self.limits.header_timeout, self._head_timed_out)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers += 1
        if self._headers > self.limits.max_headers:
            self._refusal = HeadTooLarge(f"the request has over {self.limits.max_headers} headers")
            raise _Refused  # httptools stops here; uvicorn answers with send_400_response
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._in_head, self._head_ended = False, True
        self._arm(self.limits.body_timeout, self._body_timed_out)
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._disarm()
        self._in_head, self._begun, self._head_bytes = True, False, 0
        super().on_message_complete()

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to a request httptools cannot parse (or that a callback
        stopped), as the API's JSON error."""
        refusal = self._refusal or BadRequest("the request is not valid HTTP")
        self._refusal = None
        self._refuse(refusal)

    # --- timers ------------------------------------------------------------------------

    def _arm(self, seconds: float, then: Callable[[], None]) -> None:
        self._disarm()
        self._timer = self.loop.call_later(seconds, then)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _head_timed_out(self) -> None:
        self._timer = None
        if not self._begun:  # no request begun: closed silently, as after a keep-alive
            self.transport.close()
            return
        seconds = self.limits.header_timeout
        self._refuse(RequestTimeout(f"the request head did not arrive within {seconds:g} s"))

    def _body_timed_out(self) -> None:
        self._timer = None
        if self.flow.read_paused:
            # The server holds the body back (the application has not read what came):
            # not the client's delay, so the clock starts again.
            self._arm(self.limits.body_timeout, self._body_timed_out)
            return
        seconds = self.limits.body_timeout
        self._refuse(RequestTimeout(f"the request body did not arrive within {seconds:g} s"))

    # --- refusing ------------------------------------------------------------------------

    def _refuse(self, error: RequestError) -> None:
        """Answer ``error`` (unless the request already has an answer under way) and end
        the connection.

        The close lingers: the answer is followed by a FIN, and what the client still
        sends is read and dropped until it closes, or for the header timeout at most.
        Closing with unread input would reset the connection, and a reset can discard
        the answer before the client has read it.
        """
        self._refusal = error
        self._disarm()
        log.info("refused a request: %s", error.message)
        cycle = self.cycle
        # Quiet where an answer is under way or given: the last request's (pipelined),
        # while a head is read, or this request's own (an early 413), while its body is.
        if self._in_head:
            quiet = cycle is not None and not cycle.response_complete
        else:
            quiet = cycle is not None and cycle.response_started
        if cycle is not None and not cycle.response_complete:
            # The application's side ends here: its reads see a disconnect, and what it
            # would still send is dropped.
            cycle.disconnected = True
            cycle.message_event.set()
        if not quiet and not self.transport.is_closing():
            self.transport.write(self._answer(error))
        self.flow.resume_reading()
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self._timer = self.loop.call_later(self.limits.header_timeout, self.transport.close)

    def _answer(self, error: RequestError) -> bytes:
        body = msgspec.json.encode(error.body())
        status = error.status or 500  # the guard's refusals all have theirs
        lines = [f"HTTP/1.1 {status} {http.HTTPStatus(status).phrase}".encode()]
        lines += [name + b": " + value for name, value in self.server_state.default_headers]
        lines += [
            b"content-type: application/json",
            b"content-length: " + str(len(body)).encode(),
            b"connection: close",
        ]
        return b"\r\n".join(lines) + b"\r\n\r\n" + body

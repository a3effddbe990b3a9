"""A TCP proxy in front of the API, over real sockets: it counts the connections and
requests that pass, and can drop an answer or answer as a gateway whose upstream is
down, so the HTTP clients' pooling and retries can be watched from outside."""

from __future__ import annotations

import contextlib
import socket
import socketserver
import threading
from types import TracebackType
from typing import Self
from urllib.parse import urlsplit

from tests.infra.ports import HOST

BAD_GATEWAY = (
    b"HTTP/1.1 502 Bad Gateway\r\ncontent-type: text/plain\r\ncontent-length: 11\r\n"
    b"connection: close\r\n\r\nBad Gateway"
)


class _Link:
    """One client connection and its upstream. ``upward`` says which way the last bytes
    went: an HTTP/1.1 client sends a request only once the answer to the one before has
    come, so each turn to upward starts a request. ``drop``: drop this request's answer."""

    def __init__(self) -> None:
        self.upward = False
        self.drop = False


class Proxy:
    """Forwards ``url`` (a free loopback port) to ``upstream``.

    Counts ``accepted`` connections, ``open`` ones and ``requests``. Set
    ``drop_responses`` to N: the next N requests reach the API, and their answers are
    dropped with their connection. Set ``bad_gateway`` to N: the next N requests are
    answered 502 by the proxy itself, as a gateway with no live upstream answers.
    """

    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        assert parts.hostname is not None and parts.port is not None
        self.upstream = (parts.hostname, parts.port)
        self.accepted = self.open = self.requests = 0
        self.drop_responses = self.bad_gateway = 0
        self.lock = threading.Lock()
        proxy = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                proxy._serve(self.request)

        self._server = socketserver.ThreadingTCPServer((HOST, 0), Handler)
        self._server.daemon_threads = True
        self._server.block_on_close = False
        self.url = f"http://{HOST}:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def _serve(self, client: socket.socket) -> None:
        with self.lock:
            self.accepted += 1
            self.open += 1
        try:
            with socket.create_connection(self.upstream) as upstream:
                link = _Link()
                up = threading.Thread(target=self._upward, args=(client, upstream, link))
                up.start()
                self._downward(upstream, client, link)
                up.join()
        finally:
            with self.lock:
                self.open -= 1

    def _upward(self, client: socket.socket, upstream: socket.socket, link: _Link) -> None:
        while data := _recv(client):
            if not link.upward:  # a new request
                with self.lock:
                    self.requests += 1
                    link.upward = True
                    refuse = self.bad_gateway > 0
                    self.bad_gateway -= int(refuse)
                    link.drop = not refuse and self.drop_responses > 0
                    self.drop_responses -= int(link.drop)
                if refuse:
                    if _read_rest(client, data):
                        client.sendall(BAD_GATEWAY)
                    break
            if not _send(upstream, data):
                break
        _end(client, upstream)

    def _downward(self, upstream: socket.socket, client: socket.socket, link: _Link) -> None:
        while data := _recv(upstream):
            with self.lock:
                link.upward = False
                drop = link.drop
            if drop or not _send(client, data):
                break  # a dropped answer ends its connection unanswered
        _end(client, upstream)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _recv(sock: socket.socket) -> bytes:
    try:
        return sock.recv(65536)
    except OSError:
        return b""


def _send(sock: socket.socket, data: bytes) -> bool:
    try:
        sock.sendall(data)
    except OSError:
        return False
    return True


def _end(*socks: socket.socket) -> None:
    """One side ended: end both directions of both."""
    for sock in socks:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def _read_rest(client: socket.socket, head: bytes) -> bool:
    """The rest of a request begun with ``head`` (read whole, so that the answer to it is
    not lost to a reset); False when the client went away."""
    while b"\r\n\r\n" not in head:
        chunk = _recv(client)
        if not chunk:
            return False
        head += chunk
    top, _, body = head.partition(b"\r\n\r\n")
    length = 0
    for line in top.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        chunk = _recv(client)
        if not chunk:
            return False
        body += chunk
    return True

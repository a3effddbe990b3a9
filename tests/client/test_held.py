"""The HTTP clients' held writes (threadfold/_async/held.py) on a real loopback
connection: a request's writes reach the socket as one when its answer is read, a body
past HOLD_BYTES goes out without waiting, and a real HttpClient's calls work through
them against the API (tests/client's contract runs every call so)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpcore

from threadfold._sync.held import HOLD_BYTES, HeldBackend, HeldStream

ANSWER = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"


class Counted:
    """A real network stream whose writes are counted (what reaches the socket)."""

    def __init__(self, stream: httpcore.NetworkStream) -> None:
        self.stream = stream
        self.writes: list[bytes] = []

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.writes.append(buffer)
        self.stream.write(buffer, timeout)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


@contextmanager
def _server(expect: int) -> Iterator[tuple[int, list[bytes]]]:
    """A server that reads ``expect`` bytes, answers ANSWER, and keeps what it read."""
    listener = socket.create_server(("127.0.0.1", 0))
    got: list[bytes] = []

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            data = b""
            while len(data) < expect:
                data += conn.recv(1 << 20)
            got.append(data)
            conn.sendall(ANSWER)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1], got
    finally:
        thread.join(10)
        listener.close()


def test_a_requests_writes_leave_as_one_when_its_answer_is_read() -> None:
    head, body = b"POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\n\r\n", b"hello"
    with _server(len(head) + len(body)) as (port, got):
        counted = Counted(httpcore.SyncBackend().connect_tcp("127.0.0.1", port, timeout=5))
        stream = HeldStream(counted)  # type: ignore[arg-type]
        stream.write(head, timeout=5)
        stream.write(body, timeout=5)
        assert counted.writes == []  # held until the answer is read
        answer = stream.read(1 << 16, timeout=5)
        stream.close()
    assert counted.writes == [head + body]
    assert got == [head + body] and answer == ANSWER


def test_a_large_body_goes_out_without_waiting_for_the_read() -> None:
    head, body = b"PUT / HTTP/1.1\r\n\r\n", b"x" * (HOLD_BYTES + 1)
    with _server(len(head) + len(body)) as (port, got):
        counted = Counted(httpcore.SyncBackend().connect_tcp("127.0.0.1", port, timeout=5))
        stream = HeldStream(counted)  # type: ignore[arg-type]
        stream.write(head, timeout=5)
        stream.write(body, timeout=5)
        assert counted.writes == [head + body]  # past HOLD_BYTES: sent at once
        assert stream.read(1 << 16, timeout=5) == ANSWER
        stream.close()
    assert got == [head + body]


def test_a_pool_on_the_held_backend_makes_requests() -> None:
    request = b"GET / HTTP/1.1\r\nHost: 127.0.0.1"
    with _server(len(request)) as (port, _), httpcore.ConnectionPool(
        network_backend=HeldBackend()
    ) as pool:
        response = pool.request("GET", f"http://127.0.0.1:{port}/")
    assert response.status == 200 and response.content == b"ok"

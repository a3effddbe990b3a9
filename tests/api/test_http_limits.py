"""The API server's own limits, over real sockets against a real API process: a request
head over the size or header count is a 431, a head or body that does not arrive in
time a 408, a connection that sends nothing is closed; each one is answered with the
JSON error and its connection closed, while other clients are served."""

from __future__ import annotations

import pickle
import select
import socket
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import msgspec
import pytest

from tests.infra.redis_server import RedisServer
from tests.workers.harness import make_settings, start_api
from threadfold.api.guard import GuardedHttpToolsProtocol, HttpLimits, protocol

MAX_HEAD = 4096
GIVE_UP = 20.0  # seconds a socket waits on the server before the test fails (never a hang)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    tmp = tmp_path_factory.mktemp("limits")
    with RedisServer() as redis_server:
        api, url = start_api(
            make_settings(redis_server.url),
            tmp,
            THREADFOLD_MAX_HEADER_BYTES=str(MAX_HEAD),
            THREADFOLD_MAX_HEADERS="20",
            THREADFOLD_HEADER_TIMEOUT_SECONDS="1",
            THREADFOLD_BODY_TIMEOUT_SECONDS="1",
        )
        try:
            yield url, int(url.rsplit(":", 1)[1])
        finally:
            api.kill()
        log = (tmp / "api.log").read_text()
        assert "Traceback" not in log, log[-3000:]


def _connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=GIVE_UP)


def _until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (a FIN, not a reset:
    the server's close lingers so that the answer is not lost)."""
    received = []
    while chunk := sock.recv(65536):
        received.append(chunk)
    return b"".join(received)


def _answer(raw: bytes) -> tuple[int, dict[str, Any]]:
    head, _, body = raw.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    headers = dict(line.split(b": ", 1) for line in head.split(b"\r\n")[1:])
    assert headers[b"content-type"] == b"application/json"
    assert headers[b"connection"] == b"close"
    error: dict[str, Any] = msgspec.json.decode(body)["error"]
    assert error["status"] == status
    return status, error


def _send_until_answered(sock: socket.socket, data: bytes) -> int:
    """Send ``data`` 64 KiB at a time until the server answers; the bytes sent."""
    sent = 0
    while sent < len(data) and not select.select([sock], [], [], 0)[0]:
        sock.sendall(data[sent : sent + 65536])
        sent += 65536
    return sent


def _slow_head(port: int) -> bytes:
    """A head dribbled one header line every 0.25 s (the pacing of a slowloris client),
    until the server answers."""
    with _connect(port) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        for n in range(int(GIVE_UP / 0.25)):
            if select.select([sock], [], [], 0.25)[0]:
                break
            sock.sendall(b"X-%d: y\r\n" % n)
        return _until_closed(sock)


def _slow_body(port: int) -> bytes:
    """A body that announces 1,000 bytes and sends 20."""
    with _connect(port) as sock:
        sock.sendall(
            b"POST /threads/slow/deltas HTTP/1.1\r\nHost: x\r\n"
            b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
            b'{"messages": ["x", "'
        )
        return _until_closed(sock)


def _silent(port: int) -> bytes:
    with _connect(port) as sock:
        return _until_closed(sock)


def test_slow_clients_get_a_408_and_are_cut_while_other_clients_are_served(
    server: tuple[str, int],
) -> None:
    url, port = server
    kinds: list[Callable[[int], bytes]] = [*[_slow_head] * 8, *[_slow_body] * 8, *[_silent] * 4]
    with ThreadPoolExecutor(len(kinds)) as pool, httpx.Client(base_url=url, timeout=30) as http:
        slow = [pool.submit(kind, port) for kind in kinds]
        # Served as usual while the slow ones hold their connections.
        for i in range(20):
            posted = http.post("/threads/fast/deltas", json={"messages": [f"m{i}"]})
            assert posted.status_code == 202, posted.text
            assert http.get("/threads/fast/status").status_code == 200
        answers = [future.result() for future in slow]
        # The slow body appended nothing; the server still serves.
        assert http.get("/threads/slow/status").status_code == 404
    for kind, raw in zip(kinds, answers, strict=True):
        if kind is _silent:
            assert raw == b""  # no request begun: closed without an answer
            continue
        status, error = _answer(raw)
        part = "head" if kind is _slow_head else "body"
        assert (status, error["code"]) == (408, "request_timeout")
        assert error["message"] == f"the request {part} did not arrive within 1 s"


def _head(*extra: bytes) -> bytes:
    return b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + b"".join(extra)


def test_a_head_over_the_size_limit_is_a_431_however_large(server: tuple[str, int]) -> None:
    _, port = server
    big = _head(b"X-Big: " + b"a" * 32 * 2**20 + b"\r\n\r\n")
    with _connect(port) as sock:  # a 32 MB header, or as much of it as is read
        sent = _send_until_answered(sock, big)
        status, error = _answer(_until_closed(sock))
    assert (status, error["code"]) == (431, "request_header_fields_too_large")
    assert error["message"] == f"the request head is over {MAX_HEAD} bytes"
    assert sent < len(big)  # answered before the client had sent it all
    # The limit is exact: a head of MAX_HEAD bytes passes, one byte more does not.
    for size, expected in ((MAX_HEAD, b"HTTP/1.1 200 "), (MAX_HEAD + 1, b"HTTP/1.1 431 ")):
        pad = size - len(_head(b"X-Pad: ", b"\r\n\r\n"))
        with _connect(port) as sock:
            sock.sendall(_head(b"X-Pad: " + b"p" * pad + b"\r\n\r\n"))
            assert _until_closed(sock).startswith(expected), size


def test_too_many_headers_is_a_431_however_many(server: tuple[str, int]) -> None:
    _, port = server
    many = _head(*(b"X-%d: y\r\n" % i for i in range(50_000)), b"\r\n")
    with _connect(port) as sock:  # 50,000 headers, or as many as are read
        _send_until_answered(sock, many)
        status, error = _answer(_until_closed(sock))
    assert (status, error["message"]) == (431, "the request has over 20 headers")
    # Host and Connection count: 18 more make 20, which pass; 19 more do not.
    for count, expected in ((18, b"HTTP/1.1 200 "), (19, b"HTTP/1.1 431 ")):
        with _connect(port) as sock:
            sock.sendall(_head(*(b"X-%d: y\r\n" % i for i in range(count)), b"\r\n"))
            assert _until_closed(sock).startswith(expected), count


def test_a_body_nested_past_any_recursion_limit_is_a_422_from_the_real_server(
    server: tuple[str, int],
) -> None:
    url, _ = server
    deep = b'{"messages": [' + b"[" * 200_000 + b"]" * 200_000 + b"]}"
    response = httpx.post(
        f"{url}/threads/deep/deltas",
        content=deep,
        headers={"content-type": "application/json"},
        timeout=GIVE_UP,
    )
    assert response.status_code == 422, response.text[:300]
    assert response.json()["error"]["field"] == "messages[0]" + "[0]" * 100


def test_the_guarded_protocol_reaches_uvicorns_worker_processes() -> None:
    """With API_WORKERS > 1 uvicorn pickles its configuration into each process it
    spawns: the protocol and its limits must survive that."""
    limits = HttpLimits(MAX_HEAD, 20, 1.0, 2.0)
    made = pickle.loads(pickle.dumps(protocol(limits)))  # noqa: S301  # our own bytes
    assert made.func is GuardedHttpToolsProtocol and made.keywords == {"limits": limits}


def _one_answer(sock: socket.socket) -> bytes:
    """One whole answer read off a kept-alive connection (its head and Content-Length)."""
    raw = b""
    while b"\r\n\r\n" not in raw:
        chunk = sock.recv(65536)
        assert chunk, "the server closed the connection"
        raw += chunk
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.lower().split(b"\r\n")
    length = next(int(line[15:]) for line in lines if line.startswith(b"content-length:"))
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk, "the server closed the connection mid-answer"
        body += chunk
    return head


def test_an_idle_connection_outlives_the_clients_keep_alive(server: tuple[str, int]) -> None:
    """httpx drops a pooled connection 5 s after its last use; a server closing at 5 s
    too (uvicorn's default) raced the client's next request on it, which failed with no
    answer. The server keeps an idle connection longer than that (65 s)."""
    _, port = server
    with _connect(port) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert _one_answer(sock).startswith(b"HTTP/1.1 200 ")
        # Idle past httpx's expiry: the server has not closed (nothing to read, no FIN).
        assert not select.select([sock], [], [], 6.0)[0]
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert _one_answer(sock).startswith(b"HTTP/1.1 200 ")

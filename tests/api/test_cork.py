"""The corked transport (api/cork.py) on a real loopback connection: the writes of one
loop turn reach the socket as one write, in order, later turns' as their own, and a
close sends what is held before it closes."""

from __future__ import annotations

import asyncio
from typing import Any

from threadfold.api.cork import Corked


class Counted:
    """A real transport whose writes are counted (what reaches the socket)."""

    def __init__(self, transport: asyncio.Transport) -> None:
        self.transport = transport
        self.writes: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.writes.append(data)
        self.transport.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)


async def _exchange(serve: Any) -> tuple[list[bytes], bytes]:
    """Run ``serve(corked)`` on the server side of a fresh connection: what reached its
    socket, write by write, and every byte the client read until EOF."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[list[bytes]] = loop.create_future()

    class Server(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            counted = Counted(transport)  # type: ignore[arg-type]
            task = loop.create_task(serve(Corked(counted, loop)))  # type: ignore[arg-type]
            task.add_done_callback(lambda _: done.set_result(counted.writes))

    server = await loop.create_server(Server, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    received = await asyncio.wait_for(reader.read(), 10)  # to EOF
    writes = await done
    writer.close()
    server.close()
    await server.wait_closed()
    return writes, received


def test_one_turns_writes_leave_as_one_and_later_turns_as_their_own() -> None:
    async def serve(t: Corked) -> None:
        t.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n")
        t.write(b"ok")
        await asyncio.sleep(0.01)  # the next turns: a streamed part
        t.write(b"-more")
        await asyncio.sleep(0.01)
        t.close()

    writes, received = asyncio.run(_exchange(serve))
    assert writes == [b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok", b"-more"]
    assert received == b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok-more"


def test_a_close_sends_what_is_held_first() -> None:
    async def serve(t: Corked) -> None:
        t.write(b"last ")
        t.writelines([b"words", b"."])
        t.close()  # in the same turn: nothing held may be lost

    writes, received = asyncio.run(_exchange(serve))
    assert writes == [b"last words."]
    assert received == b"last words."

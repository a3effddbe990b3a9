"""A thread as seen through one client: its appends, and reads that see them.

What the LangChain history and the LangGraph helper share, without LangChain: a thread
read back as plain dicts (the API's ``model_dump()`` form) that waits for what was
appended to it through the same client (read-your-writes), over any kind of client.
The version of the latest append is remembered, and a read asks for at least that
version: right after an append the worker may not have folded it yet, and a history
that did not show the message it was just given would make an agent repeat itself.

The versions are remembered per client, not per object: LangChain's
``RunnableWithMessageHistory`` makes a new history object for every call, and each
must read back what the previous one added (with one memory per object, the second
call's model was given the history without the first call's turn).
"""

from __future__ import annotations

import asyncio
import inspect
import math
import threading
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Final, TypeGuard, cast

from threadfold.core.versions import parse_version
from threadfold.errors import NotFound
from threadfold.types import Appended, AsyncClientProtocol, ClientProtocol
from threadfold.workers.threads import query

Client = ClientProtocol | AsyncClientProtocol


def is_async(client: Client) -> TypeGuard[AsyncClientProtocol]:
    """Whether ``client``'s calls are coroutines (``AsyncClient``, ``AsyncHttpClient``)."""
    return inspect.iscoroutinefunction(client.append)


#: Threads whose latest version a client remembers, the least recently used forgotten
#: first: a thread forgotten is one not written through the client for that long, whose
#: appends the workers have long folded.
REMEMBERED: Final = 10_000


class Versions:
    """The version of the latest append to each thread through one client."""

    def __init__(self, size: int = REMEMBERED) -> None:
        self.size = size
        self._latest: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, thread_id: str) -> str | None:
        with self._lock:
            return self._latest.get(thread_id)

    def seen(self, thread_id: str, version: str) -> None:
        """Remember ``version`` if it is later than the one remembered: appends made
        from several threads of execution may come back in any order."""
        with self._lock:
            known = self._latest.get(thread_id)
            if known is None or parse_version(version) > parse_version(known):
                self._latest[thread_id] = version
            self._latest.move_to_end(thread_id)
            while len(self._latest) > self.size:
                self._latest.popitem(last=False)


_BY_CLIENT: weakref.WeakKeyDictionary[Any, Versions] = weakref.WeakKeyDictionary()
_BY_CLIENT_LOCK = threading.Lock()


def versions_of(client: Any) -> Versions:
    """The versions remembered for ``client`` (as long as it lives)."""
    with _BY_CLIENT_LOCK:
        try:
            found = _BY_CLIENT.get(client)
            if found is None:
                found = _BY_CLIENT[client] = Versions()
        except TypeError:  # not weakly referable, or not hashable: remembered by the caller
            return Versions()
        return found


class Conversation:
    """A thread as seen through ``client``.

    ``wait`` bounds how long a read waits for the latest append through the client to
    be folded (``VersionNotReached``, a ``TimeoutError``, after it); with
    ``read_your_writes`` False a read takes the thread as it stands. Thread-safe with a
    sync client; with an asyncio client, it belongs to that client's event loop.
    """

    def __init__(
        self,
        client: Client,
        thread_id: str,
        *,
        wait: float = 10.0,
        read_your_writes: bool = True,
    ) -> None:
        self.client = client
        self.thread_id = query.thread_id(thread_id)
        if (
            isinstance(wait, bool)
            or not isinstance(wait, int | float)
            or not (0 <= wait < math.inf)
        ):
            raise ValueError(f"wait: expected a finite number of seconds >= 0, got {wait!r}")
        self.wait = float(wait)
        self.read_your_writes = read_your_writes
        self._versions = versions_of(client)

    @property
    def version(self) -> str | None:
        """The version of the latest append to the thread through this client (None
        before the first)."""
        return self._versions.get(self.thread_id)

    def seen(self, version: str) -> None:
        self._versions.seen(self.thread_id, version)

    def read(self) -> list[dict[str, Any]]:
        """The thread's messages, the appends through this client included; [] for a
        thread that was never written (or was deleted)."""
        client = self.check_sync("read")
        wanted = self._wanted()
        try:
            state = client.state(
                self.thread_id, min_version=wanted, wait=self.wait if wanted else None
            )
        except NotFound:
            return []
        return state.messages

    async def aread(self) -> list[dict[str, Any]]:
        client = self.client
        if not is_async(client):
            # A sync client blocks: off the event loop, as LangChain's defaults do.
            return await asyncio.to_thread(self.read)
        wanted = self._wanted()
        try:
            state = await client.state(
                self.thread_id, min_version=wanted, wait=self.wait if wanted else None
            )
        except NotFound:
            return []
        return state.messages

    def append(self, messages: Sequence[Any], *, delta_id: str | None = None) -> Appended:
        done = self.check_sync("append").append(self.thread_id, messages, delta_id=delta_id)
        self.seen(done.version)
        return done

    async def aappend(self, messages: Sequence[Any], *, delta_id: str | None = None) -> Appended:
        client = self.client
        if is_async(client):
            done = await client.append(self.thread_id, messages, delta_id=delta_id)
        else:
            sync = self.check_sync("append")  # a sync client blocks: off the event loop
            done = await asyncio.to_thread(sync.append, self.thread_id, messages, delta_id=delta_id)
        self.seen(done.version)
        return done

    def _wanted(self) -> str | None:
        return self.version if self.read_your_writes else None

    def check_sync(self, call: str) -> ClientProtocol:
        """The client, if it is a sync one; else a TypeError naming ``call``."""
        client = self.client
        if is_async(client):
            # An asyncio client belongs to its event loop: a sync call cannot drive it.
            raise TypeError(
                f"{call}: {client!r} is an asyncio client; use the async methods "
                "(a-prefixed), or give a sync client (threadfold.Client, HttpClient)"
            )
        return cast(ClientProtocol, client)  # not an asyncio one: the other kind

    def __repr__(self) -> str:
        return f"<Conversation thread_id={self.thread_id!r} client={self.client!r}>"


class OnThread:
    """What an integration kept in one thread (a chat history, a graph's conversation)
    shows of it: the thread, the client, the version of its latest append."""

    _thread: Conversation

    @property
    def thread_id(self) -> str:
        return self._thread.thread_id

    @property
    def client(self) -> Client:
        return self._thread.client

    @property
    def version(self) -> str | None:
        """The version of the latest append to the thread through this client (None
        before any)."""
        return self._thread.version

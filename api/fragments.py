"""Stored message bodies as JSON, memoized by their bytes.

A state read decodes every stored body (msgpack), builds LangChain's dict form and
encodes it as JSON: about 1.5 µs per message, three quarters of the API's own work for
a 100-message thread. A stored message (its id and its body's bytes; bodies are stored
without the id) is an immutable value, so it always gives the same JSON; threads are
read far more often than their messages change, and each read of a hot thread then
only looks its messages up. The cache is bounded by bytes and simply starts over when
full (no per-hit bookkeeping on the hot path).

A whole thread's read is looked up a page at a time first: a page's bytes are its
records' ids and bodies (and their positions and token counts), so the same page always
gives the same messages' JSON, and a hit skips splitting the page into records and
looking each one up. Only the page an append or an edit rewrote misses, and its
messages are then looked up one by one as above.

A stored message JSON cannot carry (threadfold.core.render) is served as its marker,
which is not cached: such messages are rare, and the marker's place in the page is not
the message's own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, cast

import msgspec

from threadfold.core.codec import decode_stored
from threadfold.core.dump import dump_message
from threadfold.core.render import Flaw, serve
from threadfold.core.results import State
from threadfold.workers.threads.service import StateBodies

_ENCODER: Final = msgspec.json.Encoder()
#: Bytes a cache entry costs beyond its key and value (dict slot, objects' headers).
_OVERHEAD: Final = 150


class JsonFragments:
    """A stored message -> its LangChain JSON, as a :class:`msgspec.Raw` for a reply.

    Looked up by the message's id (as Redis sent it), then checked against the body:
    hashing the short id is cheaper than hashing the body, and a changed body under
    the same id is simply a miss that replaces the entry.
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._cache: dict[bytes, tuple[bytes, msgspec.Raw]] = {}
        #: A page's bytes -> its messages' JSON (only pages whose messages all have one).
        self._pages: dict[bytes, tuple[msgspec.Raw, ...]] = {}
        self._bytes = 0
        self.hits = 0
        self.misses = 0

    def of(
        self, ids: Sequence[bytes], bodies: Sequence[bytes], start: int = 0
    ) -> tuple[list[msgspec.Raw], list[Flaw]]:
        """The page's messages as JSON, and the markers served among them (``start``:
        the index of the first in the reply)."""
        cache = self._cache
        found: list[msgspec.Raw | None] = []
        missing: list[int] = []
        for i, (ident, body) in enumerate(zip(ids, bodies, strict=True)):
            entry = cache.get(ident)
            if entry is not None and entry[0] == body:
                found.append(entry[1])
            else:
                found.append(None)
                missing.append(i)
        self.hits += len(found) - len(missing)
        self.misses += len(missing)
        unservable: list[Flaw] = []
        for i in missing:
            message = decode_stored(bodies[i], ids[i].decode())
            try:
                frag = msgspec.Raw(_ENCODER.encode(dump_message(message)))
            except Exception:  # noqa: BLE001  # JSON cannot carry it: served as its marker
                [served], flaw = serve(message, "langchain", start + i)
                found[i] = msgspec.Raw(_ENCODER.encode(served))
                if flaw is not None:  # (it is: what JSON refused, serve() marks)
                    unservable.append(flaw)
                continue
            found[i] = frag
            self._keep(ids[i], bodies[i], frag)
        return found, unservable  # type: ignore[return-value]  # every None was filled

    def of_pages(self, pages: Sequence[bytes]) -> tuple[list[msgspec.Raw], list[Flaw]]:
        """:meth:`of` the messages of whole pages, in order: each page looked up whole
        first, then its records one by one."""
        cache = self._pages
        found: list[msgspec.Raw] = []
        unservable: list[Flaw] = []
        for page in pages:
            entry = cache.get(page)
            if entry is not None:
                found += entry
                self.hits += len(entry)
                continue
            ids, bodies = StateBodies.split(page)
            raws, flaws = self.of(ids, bodies, len(found))
            if flaws:  # a marker's text names its place in the reply: not the page's own
                unservable += flaws
            else:
                self._keep_page(page, tuple(raws))
            found += raws
        return found, unservable

    def _keep(self, ident: bytes, body: bytes, frag: msgspec.Raw) -> None:
        if self._room(len(ident) + len(body) + len(frag) + _OVERHEAD):
            self._cache[ident] = (body, frag)

    def _keep_page(self, page: bytes, raws: tuple[msgspec.Raw, ...]) -> None:
        if self._room(len(page) + sum(len(r) for r in raws) + _OVERHEAD * (1 + len(raws))):
            self._pages[page] = raws

    def _room(self, size: int) -> bool:
        """Whether an entry of ``size`` bytes is kept, its bytes counted: the cache
        starts over when it is full, and never keeps one larger than the budget."""
        if size > self.max_bytes:
            return False
        if self._bytes + size > self.max_bytes:
            self._cache.clear()
            self._pages.clear()
            self._bytes = 0
        self._bytes += size
        return True

    def state(self, thread_id: str, found: StateBodies) -> State:
        """The live page ``found`` (its bodies as stored, read by the thread service's
        :meth:`~threadfold.workers.threads.service.AsyncThreads.state_bodies`) as
        ``GET state`` answers it in LangChain's form, each message's JSON memoized."""
        if found.pages:
            encoded, flaws = self.of_pages(found.pages)
        else:
            encoded, flaws = self.of(found.ids, found.bodies)
        # The messages are their JSON, pre-encoded (msgspec.Raw), which the encoder writes
        # as it is: the type says what a reader of the body decodes.
        messages = cast(list[dict[str, Any]], encoded)
        return State(
            thread_id,
            found.version,
            found.total,
            found.has_more,
            "langchain",
            messages,
            tuple(flaw.item() for flaw in flaws),
        )

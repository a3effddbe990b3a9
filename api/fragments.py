"""Stored message bodies as JSON, memoized by their bytes.

A state read decodes every stored body (msgpack), builds LangChain's dict form and
encodes it as JSON: about 1.5 µs per message, three quarters of the API's own work for
a 100-message thread. A stored message (its id and its body's bytes; bodies are stored
without the id) is an immutable value, so it always gives the same JSON; threads are
read far more often than their messages change, and each read of a hot thread then
only looks its messages up. The cache is bounded by bytes and simply starts over when
full (no per-hit bookkeeping on the hot path).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import msgspec

from core import dump_messages
from core.codec import decode_stored

_ENCODER: Final = msgspec.json.Encoder()
#: Bytes a cache entry costs beyond its key and value (dict slot, objects' headers).
_OVERHEAD: Final = 150


Stored = tuple[str, bytes]  # (id, body as stored)


class JsonFragments:
    """A stored message -> its LangChain JSON, as a :class:`msgspec.Raw` for a reply."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._cache: dict[Stored, msgspec.Raw] = {}
        self._bytes = 0
        self.hits = 0
        self.misses = 0

    def of(self, ids: Sequence[str], bodies: Sequence[bytes]) -> list[msgspec.Raw]:
        cache = self._cache
        keys = list(zip(ids, bodies, strict=True))
        found = [cache.get(key) for key in keys]
        missing = [i for i, frag in enumerate(found) if frag is None]
        self.hits += len(keys) - len(missing)
        self.misses += len(missing)
        if missing:
            dumped = dump_messages(decode_stored(keys[i][1], keys[i][0]) for i in missing)
            for i, plain in zip(missing, dumped, strict=True):
                frag = msgspec.Raw(_ENCODER.encode(plain))
                found[i] = frag
                self._keep(keys[i], frag)
        return found  # type: ignore[return-value]  # every None was filled above

    def _keep(self, key: Stored, frag: msgspec.Raw) -> None:
        size = len(key[0]) + len(key[1]) + len(frag) + _OVERHEAD
        if size > self.max_bytes:
            return
        if self._bytes + size > self.max_bytes:
            self._cache.clear()
            self._bytes = 0
        self._cache[key] = frag
        self._bytes += size

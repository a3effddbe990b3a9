"""Stored message bodies as JSON, memoized by their bytes.

A state read decodes every stored body (msgpack), builds LangChain's dict form and
encodes it as JSON: about 1.5 µs per message, three quarters of the API's own work for
a 100-message thread. A stored body is an immutable value, so the same bytes always
give the same JSON; threads are read far more often than their messages change, and
each read of a hot thread then only looks its bodies up. The cache is bounded by bytes
and simply starts over when full (no per-hit bookkeeping on the hot path).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import msgspec

from core import dump_messages
from core.codec import decode_message

_ENCODER: Final = msgspec.json.Encoder()
#: Bytes a cache entry costs beyond its key and value (dict slot, objects' headers).
_OVERHEAD: Final = 150


class JsonFragments:
    """msgpack body -> its LangChain JSON, as a :class:`msgspec.Raw` to embed in a reply."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._cache: dict[bytes, msgspec.Raw] = {}
        self._bytes = 0
        self.hits = 0
        self.misses = 0

    def of(self, bodies: Sequence[bytes]) -> list[msgspec.Raw]:
        cache = self._cache
        found = [cache.get(body) for body in bodies]
        missing = [i for i, frag in enumerate(found) if frag is None]
        self.hits += len(bodies) - len(missing)
        self.misses += len(missing)
        if missing:
            dumped = dump_messages(decode_message(bodies[i]) for i in missing)
            for i, plain in zip(missing, dumped, strict=True):
                frag = msgspec.Raw(_ENCODER.encode(plain))
                found[i] = frag
                self._keep(bodies[i], frag)
        return found  # type: ignore[return-value]  # every None was filled above

    def _keep(self, body: bytes, frag: msgspec.Raw) -> None:
        size = len(body) + len(frag) + _OVERHEAD
        if size > self.max_bytes:
            return
        if self._bytes + size > self.max_bytes:
            self._cache.clear()
            self._bytes = 0
        self._cache[body] = frag
        self._bytes += size

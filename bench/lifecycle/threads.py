"""The threads the lifecycle benchmark loads: many small ones, each a function of its
number ``k`` alone, so that any process can make any of them and the checks can make
them again without keeping a million of them.

A thread is one delta of one or two short messages (a human question, every other one
answered by an AI message), with ids, as LangGraph gives them. Its id is uuid4-shaped
(36 characters), as LangGraph's thread ids are: the ref is in the name of every key of
the thread and in every bucket set that lists it, so the id's length is part of the
bytes per thread. With metadata, thread ``k`` belongs to user ``u<k mod users>`` and
``rare`` threads, spread over the range, also hold ``tag: rare``.
"""

from __future__ import annotations

import hashlib
import random
import uuid
from dataclasses import dataclass
from typing import Any, Final

from bench.common.inputs import text
from threadfold.core.keys import DEFAULT_TENANT, make_ref
from threadfold.workers.ingest.producer import Delta

#: The metadata key every thread holds (with metadata), and the rare one's key and value.
USER: Final = "user"
RARE_KEY, RARE_VALUE = "tag", "rare"


def _uuid(k: int, salt: bytes) -> str:
    digest = hashlib.blake2b(k.to_bytes(8, "big"), digest_size=16, person=salt).digest()
    return str(uuid.UUID(bytes=digest, version=4))


@dataclass(frozen=True)
class Shape:
    """``threads`` small threads, with metadata (``users`` users, ``rare`` rare ones) or
    without."""

    threads: int
    metadata: bool
    users: int = 1000
    rare: int = 10

    @property
    def name(self) -> str:
        return f"{self.threads:,} threads, {'metadata' if self.metadata else 'no metadata'}"

    def thread_id(self, k: int) -> str:
        return _uuid(k, b"thread")

    def ref(self, k: int) -> str:
        return make_ref(DEFAULT_TENANT, self.thread_id(k))

    def is_rare(self, k: int) -> bool:
        return self.metadata and k % max(1, self.threads // self.rare) == 0 and (
            k // max(1, self.threads // self.rare) < self.rare)

    def metadata_of(self, k: int) -> dict[str, str] | None:
        if not self.metadata:
            return None
        found = {USER: f"u{k % self.users}"}
        if self.is_rare(k):
            found[RARE_KEY] = RARE_VALUE
        return found

    def messages(self, k: int) -> list[dict[str, Any]]:
        rng = random.Random(k)
        out = [{"type": "human", "content": text(rng, 40), "id": _uuid(k, b"human")}]
        if k % 2:
            out.append({"type": "ai", "content": text(rng, 60), "id": _uuid(k, b"ai")})
        return out

    def delta(self, k: int) -> Delta:
        return Delta(self.thread_id(k), self.messages(k), metadata=self.metadata_of(k))

    def user_threads(self, user: int) -> int:
        """How many threads hold ``user: u<user>``."""
        return len(range(user, self.threads, self.users))

"""CONTEXT (``context.lua``): the pages of a thread a context window needs, from its end
(or its start), with the thread's first message, in one consistent read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal, NamedTuple

from threadfold.core.codec import decode_stored
from threadfold.core.context import Sized, Span
from threadfold.core.keys import ThreadKeys
from threadfold.workers.redisio.client import Call, as_bytes, text
from threadfold.workers.storage.contract import keys_of
from threadfold.workers.storage.lua import script
from threadfold.workers.storage.pages import sized_records

SCRIPT: Final = script("context", "common", "state")

Direction = Literal["last", "first"]


class Keys(NamedTuple):
    meta: str
    pages: str


class Args(NamedTuple):
    direction: Direction
    want: int


@dataclass(frozen=True, slots=True)
class ContextRead:
    """What a read found: the thread's version, its message count, and the span of it
    the pages sent hold (messages built, each with its record's count)."""

    version: str
    total: int
    span: Span


def call(k: ThreadKeys, direction: Direction, want: int) -> Call:
    """The pages from the thread's ``direction`` end whose counts add up past ``want``."""
    return Call(SCRIPT, keys_of(Keys, k), Args(direction, want))


def _sized(page: bytes) -> list[Sized]:
    return [
        Sized(decode_stored(body, ident.decode()), tokens, position)
        for position, ident, body, tokens in sized_records(page)
    ]


def parse(raw: list[Any]) -> ContextRead | None:
    """The answer to ``call``; None when the thread was never written."""
    if not raw:
        return None
    version, total, complete = text(raw[0]), int(raw[1]), bool(int(raw[2]))
    numbered = sorted(zip(map(int, raw[5::2]), raw[6::2], strict=True))
    items = [s for _, page in numbered for s in _sized(as_bytes(page))]
    first = None
    if int(raw[3]) >= 0:  # the first page, apart from the run at the thread's end
        first = _sized(as_bytes(raw[4]))[0]
    return ContextRead(version, total, Span(items, complete, first))

"""The state reply built from memoized JSON fragments is byte for byte the uncached one."""

from __future__ import annotations

from typing import Any

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from api.fragments import JsonFragments
from api.schemas import StateOut
from core import dump_messages
from core.codec import decode_message, encode_message
from core.convert import to_messages
from tests.support import golden_cases


# Every message of the golden cases: all types, tool calls, chunks, metadata, blocks.
def _convertible(item: object) -> bool:
    try:
        to_messages([item])
    except Exception:  # the golden cases include inputs LangChain rejects
        return False
    return isinstance(item, dict) and item.get("type") != "remove"


MESSAGES = to_messages(
    [
        item
        for case in golden_cases()
        for batch in case["input"]["batches"]
        for item in batch
        if _convertible(item)
    ]
)
BODIES = [encode_message(m) for m in MESSAGES]


def _reply(messages: list[Any]) -> bytes:
    return msgspec.json.encode(StateOut("t", "1-0", len(messages), False, "langchain", messages))


@given(st.lists(st.sampled_from(range(len(BODIES))), max_size=30), st.integers(0, 4000))
def test_cached_reply_equals_the_uncached_one(picks: list[int], budget: int) -> None:
    bodies = [BODIES[i] for i in picks]
    plain = _reply(dump_messages(decode_message(b) for b in bodies))
    cache = JsonFragments(budget)
    assert _reply(list(cache.of(bodies))) == plain
    assert _reply(list(cache.of(bodies))) == plain  # from the cache (what still fits)
    assert cache._bytes <= budget


def test_repeated_reads_hit_and_the_budget_holds() -> None:
    cache = JsonFragments(10_000)
    cache.of(BODIES[:5])
    assert (cache.hits, cache.misses) == (0, 5)
    cache.of(BODIES[:5])
    assert (cache.hits, cache.misses) == (5, 5)
    for _ in range(3):
        cache.of(BODIES)
        assert cache._bytes <= 10_000

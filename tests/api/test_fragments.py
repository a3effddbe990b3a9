"""The state reply built from memoized JSON fragments is byte for byte the uncached one."""

from __future__ import annotations

from typing import Any

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from tests.support import golden_cases
from threadfold.api.fragments import JsonFragments
from threadfold.core import dump_messages
from threadfold.core.codec import decode_stored, encode_message, encode_stored
from threadfold.core.convert import to_messages
from threadfold.core.messages import HumanMessage
from threadfold.core.render import serve
from threadfold.core.results import State
from threadfold.workers.storage.pages import record
from threadfold.workers.storage.read_state import StateBodies


# Every message of the golden cases: all types, tool calls, chunks, metadata, blocks.
def _convertible(item: object) -> bool:
    try:
        to_messages([item])
    except Exception:  # the golden cases include inputs LangChain rejects
        return False
    return isinstance(item, dict) and item.get("type") != "remove"


MESSAGES = [  # a stored message always has an id (ingestion stamps the missing ones)
    m
    for m in to_messages(
        [
            item
            for case in golden_cases()
            for batch in case["input"]["batches"]
            for item in batch
            if _convertible(item)
        ]
    )
    if m.id
]
# As stored (without the id), and as an older version stored them (with it).
STORED = [(str(m.id).encode(), encode_stored(m)) for m in MESSAGES]
STORED += [(str(m.id).encode(), encode_message(m)) for m in MESSAGES[:10]]


def _reply(messages: list[Any]) -> bytes:
    return msgspec.json.encode(State("t", "1-0", len(messages), False, "langchain", messages))


@given(st.lists(st.sampled_from(range(len(STORED))), max_size=30), st.integers(0, 4000))
def test_cached_reply_equals_the_uncached_one(picks: list[int], budget: int) -> None:
    ids = [STORED[i][0] for i in picks]
    bodies = [STORED[i][1] for i in picks]
    plain = _reply(dump_messages(MESSAGES[i % len(MESSAGES)] for i in picks))
    assert plain == _reply(
        dump_messages(decode_stored(b, i.decode()) for i, b in zip(ids, bodies, strict=True))
    )
    cache = JsonFragments(budget)
    assert _reply(cache.of(ids, bodies)[0]) == plain
    assert _reply(cache.of(ids, bodies)[0]) == plain  # from the cache (what still fits)
    assert cache._bytes <= budget


def test_the_same_body_under_two_ids_gives_two_messages() -> None:
    """Bodies are stored without their id: two equal messages share a body's bytes."""
    cache = JsonFragments(10_000)
    body = encode_stored(MESSAGES[0])
    (one, two), _ = cache.of([b"a", b"b"], [body, body])
    assert msgspec.json.decode(one)["id"] == "a"
    assert msgspec.json.decode(two)["id"] == "b"


def test_repeated_reads_hit_and_the_budget_holds() -> None:
    cache = JsonFragments(10_000)
    ids, bodies = [i for i, _ in STORED], [b for _, b in STORED]
    distinct = dict(zip(ids, bodies, strict=True))  # the golden cases reuse ids
    first = list(distinct)[:5]
    cache.of(first, [distinct[i] for i in first])
    assert (cache.hits, cache.misses) == (0, 5)
    cache.of(first, [distinct[i] for i in first])
    assert (cache.hits, cache.misses) == (5, 5)
    changed = [distinct[first[0]] + b"", *(distinct[i] for i in first[1:])]
    other = encode_stored(MESSAGES[-1])
    assert other != changed[0]
    cache.of(first, [other, *changed[1:]])  # a new body under a known id: a miss
    assert (cache.hits, cache.misses) == (9, 6)
    for _ in range(3):
        cache.of(ids, bodies)
        assert cache._bytes <= 10_000


def test_a_body_json_cannot_carry_is_its_marker_in_its_place_and_never_cached() -> None:
    cache = JsonFragments(10_000)
    bad = HumanMessage(content="x", additional_kwargs={"k": {None: 1}})  # stored by hand
    ids = [b"a", b"bad", b"c"]
    bodies = [encode_stored(MESSAGES[0]), msgspec.msgpack.encode(bad), encode_stored(MESSAGES[1])]
    [marker], flaw = serve(decode_stored(bodies[1], "bad"), "langchain", 1)
    for hits, misses in ((0, 3), (2, 4)):  # the marker is made again on every read
        frags, unservable = cache.of(ids, bodies)
        assert unservable == [flaw] and msgspec.json.decode(frags[1]) == marker
        assert (cache.hits, cache.misses) == (hits, misses)


def _pages(stored: list[tuple[bytes, bytes]], per: int) -> list[bytes]:
    """Pages of ``per`` records each, as a thread stores them (positions in order)."""
    made = [record(i.decode(), n, b, n % 7) for n, (i, b) in enumerate(stored)]
    return [b"".join(made[at : at + per]) for at in range(0, len(made), per)]


@given(
    st.lists(st.sampled_from(range(len(STORED))), max_size=40),
    st.integers(1, 16),
    st.integers(0, 6000),
)
def test_a_whole_thread_looked_up_by_pages_is_the_uncached_reply(
    picks: list[int], per: int, budget: int
) -> None:
    pages = _pages([STORED[i] for i in picks], per)
    plain = _reply(dump_messages(MESSAGES[i % len(MESSAGES)] for i in picks))
    cache = JsonFragments(budget)
    for _ in range(3):  # cold, then from the page cache (what still fits)
        found, flaws = cache.of_pages(pages)
        assert _reply(found) == plain and flaws == []
        assert cache._bytes <= budget
    whole = StateBodies.whole("1-0", len(picks), False, tuple(pages))
    assert _reply(cache.state("t", whole).messages) == plain
    assert whole.ids == [STORED[i][0] for i in picks]  # split only when asked
    assert whole.bodies == [STORED[i][1] for i in picks]


def test_a_page_with_a_marker_is_never_cached_and_the_marker_names_its_place() -> None:
    cache = JsonFragments(100_000)
    bad = HumanMessage(content="x", additional_kwargs={"k": {None: 1}})  # stored by hand
    stored = [*STORED[:3], (b"bad", msgspec.msgpack.encode(bad)), *STORED[3:5]]
    pages = _pages(stored, 2)  # the marker is the second record of the second page
    [marker], flaw = serve(decode_stored(stored[3][1], "bad"), "langchain", 3)
    for _ in range(2):
        found, unservable = cache.of_pages(pages)
        assert unservable == [flaw] and msgspec.json.decode(found[3]) == marker
        assert pages[1] not in cache._pages and pages[0] in cache._pages

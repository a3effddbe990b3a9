"""Stamped ids look exactly like LangGraph's ``str(uuid.uuid4())``, are drawn from
``uuid.uuid4`` (a patched one makes them reproducible), and one message object passed
twice gets one id."""

from __future__ import annotations

import itertools
import random
import re
import uuid
from collections.abc import Callable

import pytest

from threadfold.core import AIMessageChunk, HumanMessage, add_messages, apply_deltas, ensure_ids
from threadfold.core.ids import uuid4_format, uuid4_str

CANONICAL = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


def test_uuid4_str_is_a_canonical_random_uuid4() -> None:
    seen = set()
    for _ in range(20_000):
        text = uuid4_str()
        parsed = uuid.UUID(text)
        assert CANONICAL.fullmatch(text), text
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122
        assert str(parsed) == text
        seen.add(text)
    assert len(seen) == 20_000


def test_every_random_bit_varies() -> None:
    """The 122 random bits all take both values (none is stuck by the masking)."""
    ones, zeros = 0, 0
    for _ in range(2_000):
        n = uuid.UUID(uuid4_str()).int
        ones |= n
        zeros |= ~n
    fixed = (0xF << 76) | (0x3 << 62)
    mask = (1 << 128) - 1
    assert (ones & ~fixed) & mask == (~fixed) & mask
    assert (zeros & ~fixed) & mask == (~fixed) & mask


def test_uuid4_format_gives_what_uuid_gives_for_the_same_bits() -> None:
    """The fast path's formatting is uuid4's: same bits in, same string out."""
    rng = random.Random(13)
    for bits in [0, (1 << 128) - 1, *(rng.getrandbits(128) for _ in range(2_000))]:
        assert uuid4_format(bits) == str(uuid.UUID(int=bits, version=4))


def _counting_uuid4() -> Callable[[], uuid.UUID]:
    counter = itertools.count(1)
    return lambda: uuid.UUID(f"00000000-0000-4000-8000-{next(counter):012d}")


def test_a_patched_uuid4_makes_every_stamping_path_reproducible(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As in LangGraph, patching ``uuid.uuid4`` fixes the ids: the defaults draw from it."""
    monkeypatch.setattr(uuid, "uuid4", _counting_uuid4())
    first = "00000000-0000-4000-8000-000000000001"
    assert uuid4_str() == first
    assert [m.id for m in ensure_ids([{"role": "user", "content": "a"}])] == [first[:-1] + "2"]
    merged = add_messages([HumanMessage(content="l")], [{"role": "user", "content": "r"}])
    assert [m.id for m in merged] == [first[:-1] + "3", first[:-1] + "4"]


def test_one_message_object_passed_twice_gets_one_id() -> None:
    m = HumanMessage(content="hi")
    twice = ensure_ids([m, m, {"role": "user", "content": "hi"}])
    assert twice[0].id == twice[1].id != twice[2].id
    assert len(apply_deltas([], [twice])) == 2
    assert len(add_messages([], [m, m])) == 1
    assert len(add_messages([m], [m])) == 1
    assert m.id is None  # frozen: the caller's object is left as it was


def test_dicts_pairs_and_chunks_passed_twice_are_new_messages_each_time() -> None:
    """LangGraph converts each occurrence of these to a message of its own (and
    ``add_messages`` turns each occurrence of a chunk into a new message)."""
    d, pair = {"role": "user", "content": "hi"}, ("user", "hi")
    stamped = ensure_ids([d, d, pair, pair])
    assert len({m.id for m in stamped}) == 4
    chunk = AIMessageChunk(content="x")
    assert len({m.id for m in ensure_ids([chunk, chunk])}) == 1
    assert len(add_messages([], [chunk, chunk])) == 2


def test_an_empty_id_on_an_object_is_kept_and_on_a_dict_is_replaced() -> None:
    kept, replaced = ensure_ids(
        [HumanMessage(content="a", id=""), {"role": "user", "content": "b", "id": ""}]
    )
    assert kept.id == ""
    assert replaced.id

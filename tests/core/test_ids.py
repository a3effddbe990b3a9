"""Stamped ids look exactly like LangGraph's ``str(uuid.uuid4())``."""

from __future__ import annotations

import re
import uuid

from core.ids import uuid4_str

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

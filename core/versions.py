"""Versions are Redis stream entry ids, ``<ms>-<seq>``: compared as integer pairs."""

from __future__ import annotations

import re
from typing import Final

from threadfold.core.errors import ThreadfoldError

# ASCII digits only: ``\d`` would take any Unicode digit (U+0661 ARABIC-INDIC DIGIT ONE),
# which int() reads but Redis does not.
_VERSION: Final = re.compile(r"([0-9]{1,20})-([0-9]{1,20})")
#: Each part of a stream id is an unsigned 64-bit integer in Redis.
MAX_PART: Final = 2**64 - 1
ZERO: Final = "0-0"


class InvalidVersion(ThreadfoldError, ValueError):
    """Raised when a version is not of the form ``<ms>-<seq>`` (two decimal integers)."""


def parse_version(text: str) -> tuple[int, int]:
    """``"1700000000000-3"`` -> ``(1700000000000, 3)``; each part at most 2**64-1."""
    match = _VERSION.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        wanted = "a version like '1700000000000-0' (<ms>-<seq>, ASCII digits)"
        raise InvalidVersion(f"expected {wanted}, got {text!r}")
    ms, seq = int(match[1]), int(match[2])
    if ms > MAX_PART or seq > MAX_PART:
        raise InvalidVersion(f"each part of a version is at most {MAX_PART}, got {text!r}")
    return ms, seq


def reached(version: str, wanted: str) -> bool:
    """Whether ``version`` is at or after ``wanted``."""
    return parse_version(version) >= parse_version(wanted)


def entry_key(entry: str) -> tuple[int, int]:
    """A stream entry id Redis gave, as numbers for ordering (unchecked: the hot path's
    :func:`parse_version`)."""
    ms, _, seq = entry.partition("-")
    return int(ms), int(seq or 0)

"""Versions are Redis stream entry ids, ``<ms>-<seq>``: compared as integer pairs."""

from __future__ import annotations

import re
from typing import Final

from core.errors import ThreadfoldError

_VERSION: Final = re.compile(r"(\d{1,20})-(\d{1,20})")
ZERO: Final = "0-0"


class InvalidVersion(ThreadfoldError, ValueError):
    """Raised when a version is not of the form ``<ms>-<seq>`` (two decimal integers)."""


def parse_version(text: str) -> tuple[int, int]:
    """``"1700000000000-3"`` -> ``(1700000000000, 3)``."""
    match = _VERSION.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        wanted = "a version like '1700000000000-0' (<ms>-<seq>)"
        raise InvalidVersion(f"expected {wanted}, got {text!r}")
    return int(match[1]), int(match[2])


def reached(version: str, wanted: str) -> bool:
    """Whether ``version`` is at or after ``wanted``."""
    return parse_version(version) >= parse_version(wanted)

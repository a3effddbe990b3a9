"""A performance target, as every benchmark judges and reports it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    """One target: what it asks, the worst value measured, and where."""

    name: str
    goal: str
    value: str
    passed: bool
    detail: str

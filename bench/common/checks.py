"""Result checks: a number only counts if the result it timed is right.

States are compared in LangChain's flat dict form: ours through ``core.dump_messages``,
LangChain's through ``model_dump()``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from threadfold.core import BaseMessage, dump_messages


@dataclass(frozen=True)
class Check:
    """One comparison: what was compared, and where the two sides first differ."""

    name: str
    ok: bool
    detail: str = ""


def lc_dump(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """LangChain messages in their flat dict form."""
    return [m.model_dump() for m in messages]


def first_difference(left: list[dict[str, Any]], right: list[dict[str, Any]]) -> str:
    """Where two dumped states differ, for the report; empty when they are equal."""
    if left == right:
        return ""
    for i, (a, b) in enumerate(zip(left, right, strict=False)):
        if a != b:
            keys = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
            return f"message {i} differs in {keys}"
    return f"lengths differ: {len(left)} vs {len(right)}"


def same_state(name: str, ours: Sequence[BaseMessage], *theirs: Sequence[Any]) -> Check:
    """Our state against one or more LangChain states."""
    dumped = dump_messages(ours)
    for other in theirs:
        detail = first_difference(dumped, lc_dump(other))
        if detail:
            return Check(name, False, detail)
    return Check(name, True)

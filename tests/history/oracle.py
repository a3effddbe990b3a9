"""The oracle by log prefix: :func:`threadfold.testing.fold` of an incarnation's first
deltas.

The fold is the one every check uses (``apply_deltas``, the reducer the differential
tests prove equal to LangGraph's ``_messages_delta_reducer``, one call per delta in
version order, each with the ids its writer was told were stored); what is the
history's own is asking it for any prefix. The state after every :data:`CHECKPOINT`
deltas is kept (messages are immutable, so a kept state is a list of references): the
state after any prefix costs at most that many steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from threadfold.core import BaseMessage, dump_messages
from threadfold.testing import fold

CHECKPOINT: Final = 32
#: Dumped states kept per incarnation (reads ask for the same few versions again and
#: again; a long run would otherwise keep one per version ever asked for).
KEPT_DUMPS: Final = 64
Dumped = list[dict[str, Any]]
#: A delta as its writer sent it and was told: its messages, the ids they got.
Delta = tuple[list[Any], list[str]]


class Fold:
    """The fold of one incarnation's deltas (given in version order), by prefix length;
    each delta is converted when a fold first reaches it."""

    def __init__(self, deltas: Sequence[Delta]) -> None:
        self.deltas = list(deltas)
        self._kept: list[list[BaseMessage]] = [[]]
        self._dumped: dict[int, Dumped] = {}

    def state(self, length: int) -> Dumped:
        """The state after the first ``length`` deltas, as the API dumps it."""
        if length not in self._dumped:
            while len(self._kept) * CHECKPOINT <= length:
                at = (len(self._kept) - 1) * CHECKPOINT
                self._kept.append(self._apply(self._kept[-1], at, at + CHECKPOINT))
            base = (length // CHECKPOINT) * CHECKPOINT
            state = self._apply(self._kept[length // CHECKPOINT], base, length)
            if len(self._dumped) >= KEPT_DUMPS:
                self._dumped.clear()
            self._dumped[length] = dump_messages(state)
        return self._dumped[length]

    def _apply(self, state: list[BaseMessage], start: int, stop: int) -> list[BaseMessage]:
        return fold(self.deltas[start:stop], state=state)

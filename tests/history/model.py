"""The history: every operation's invocation, answer and wall-clock interval.

Intervals are wall-clock seconds (``time.time()``), taken just before the invocation and
just after its answer, because the checker compares them with stream ids, which are
Redis's wall-clock milliseconds on the same machine: a trim at Redis time ``T`` drops
entries older than ``T - retention``, and ``T`` lies within the interval of whatever
observed it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import msgspec

from threadfold.core.versions import parse_version

Kind = Literal[
    "write",  # deltas appended (HTTP single or bulk, or the Python producer)
    "delete",  # DELETE /threads/{id}
    "poison",  # an entry XADD-ed to a log by hand: undecodable, id-less or empty
    "retry",  # threadfold retry [--skip] (the store's call, or the CLI)
    "audit",  # recompute --audit (replay.audit_many, or the CLI)
    "rebuild",  # recompute --rebuild (replay.rebuild_many, or the CLI)
    "travel",  # GET /threads/{id}/state?at_version=v
    "copy",  # POST /threads/{id}/copy at v, the copy read back: judged as a travel
    "live",  # GET /threads/{id}/state (optionally with min_version)
    "final",  # a live read once everything has quiesced: must be the whole fold
]

#: Where a version key sorts below every entry id (a version of nothing).
ZERO = (0, 0)


def key(version: str) -> tuple[int, int]:
    """A version as the integer pair Redis orders stream ids by."""
    return parse_version(version)


class Op(msgspec.Struct, kw_only=True):
    """One operation: what was asked (``call``) and answered (``answer``), on which
    threads (refs), through which door (``via``), between ``start`` and ``end``."""

    n: int
    kind: Kind
    via: str
    refs: list[str]
    start: float
    end: float = 0.0
    call: dict[str, Any] = msgspec.field(default_factory=dict)
    answer: dict[str, Any] = msgspec.field(default_factory=dict)

    @property
    def end_ms(self) -> float:
        return self.end * 1000.0


class History:
    """Operations in the order they were started (thread-safe)."""

    def __init__(self) -> None:
        self.ops: list[Op] = []
        self._lock = threading.Lock()

    @contextmanager
    def op(self, kind: Kind, via: str, refs: list[str], **call: Any) -> Iterator[Op]:
        """Record an operation: its start now, its end when the block leaves. An
        exception is the answer (``{"exception": ...}``) and is not raised further:
        the checker judges it (a crash of an operation is a wrong answer)."""
        with self._lock:
            op = Op(n=len(self.ops), kind=kind, via=via, refs=refs, start=0.0, call=call)
            self.ops.append(op)
        op.start = time.time()
        try:
            yield op
        except Exception as exc:  # recorded; the checker calls it wrong
            op.answer = {"exception": f"{type(exc).__name__}: {exc}"}
        finally:
            op.end = time.time()

    def save(self, path: Path) -> None:
        path.write_bytes(msgspec.json.encode(self.ops))

    @staticmethod
    def load(path: Path) -> History:
        history = History()
        history.ops = msgspec.json.decode(path.read_bytes(), type=list[Op])
        return history

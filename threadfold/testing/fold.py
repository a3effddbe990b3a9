"""The reference fold: what a thread must hold, given the deltas it acknowledged.

The project's reducer (:func:`threadfold.core.apply_deltas`, which the differential
tests prove equal to LangGraph's ``_messages_delta_reducer``) called once per delta, in
version order, each delta's messages with the ids its append was answered with. A
deployment folds deltas in batches of any size; its state must equal this.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

from threadfold.core import BaseMessage, apply_deltas, to_messages


def version_key(version: str) -> tuple[int, int]:
    """``"1700000000000-3"`` -> ``(1700000000000, 3)``: a version's order. Unchecked (the
    versions come from the deployment's own answers, and benchmarks call this in loops)."""
    ms, _, seq = version.partition("-")
    return int(ms), int(seq)


def stamped(messages: Sequence[Any], ids: Sequence[str]) -> list[BaseMessage]:
    """A delta's messages as stored: converted, each with the id its append answered."""
    converted = to_messages(list(messages))
    return [msgspec.structs.replace(m, id=i) for m, i in zip(converted, ids, strict=True)]


def fold(
    deltas: Iterable[tuple[Sequence[Any], Sequence[str]]],
    *,
    state: Sequence[BaseMessage] = (),
    merge_chunks: bool = False,
) -> list[BaseMessage]:
    """The reference state: ``state`` with each ``(messages, ids)`` delta applied by its
    own :func:`~threadfold.core.apply_deltas` call, in the order given (version order).

    One call per delta, exactly as each was written: whatever batches a deployment
    folded the deltas in, its state must equal this. ``merge_chunks`` must be the
    deployment's setting."""
    out = state if isinstance(state, list) else list(state)  # a kept index stays
    for messages, ids in deltas:
        out = apply_deltas(out, [stamped(messages, ids)], merge_chunks=merge_chunks)
    return list(out) if out is state else out


def as_json(value: Any) -> Any:
    """What ``value`` looks like after a JSON round trip (tuples become lists...)."""
    return msgspec.json.decode(msgspec.json.encode(value))

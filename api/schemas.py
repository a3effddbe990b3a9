"""Request and response bodies: msgspec Structs, decoded and encoded without a dict step.

Messages travel as LangChain message-likes on the way in (every form LangChain's
``convert_to_messages`` accepts) and as LangChain's flat ``model_dump()`` form on the
way out; the OpenAPI schema describes both.
"""

from __future__ import annotations

from typing import Any

import msgspec

from threadfold.workers.threads.results import Appended

MessageLike = Any  # dict, [role, content] pair or string: validated by core, not here


class DeltaIn(msgspec.Struct, forbid_unknown_fields=True):
    """``POST /threads/{thread_id}/deltas``."""

    messages: list[MessageLike]
    delta_id: str | None = None


class BulkItem(msgspec.Struct, forbid_unknown_fields=True):
    """One delta of a bulk request."""

    thread_id: str
    messages: list[MessageLike]
    delta_id: str | None = None


class BulkIn(msgspec.Struct, forbid_unknown_fields=True):
    """``POST /deltas``: validated as a whole before any delta is appended."""

    deltas: list[BulkItem]


class BulkAccepted(msgspec.Struct):
    """``POST /deltas``'s answer: each delta's outcome, in the order sent."""

    results: list[Appended]


class LagHistogram(msgspec.Struct):
    """The enqueue-to-visible lag of applied deltas, all since the start: ``counts[i]``
    deltas within ``bounds[i]`` ms (cumulative), the last entry of ``counts`` all of them."""

    bounds: list[int]
    counts: list[int]
    sum_ms: float


class PipelineOut(msgspec.Struct):
    """``GET /pipeline``: fleet-wide totals at ``at_ms`` (the API's clock). Counters only
    grow: rates are the difference of two samples over their ``at_ms`` difference."""

    at_ms: int
    deltas_ingested: int
    entries_applied: int
    commits: int
    threads_with_backlog: int
    threads_quarantined: int
    processes: dict[str, int]
    visible_lag_ms: LagHistogram

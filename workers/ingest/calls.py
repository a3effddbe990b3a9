"""A bulk's ingest calls, and their answers: what the producers (sync and asyncio,
:mod:`threadfold.workers.ingest.producer`) send and read, without I/O.

Each thread's deltas go in one script call with the others of its group (all of a
bulk's on one server, a bucket's on a cluster), in order; each delta's answer is its
version (or the one a retried ``delta_id`` got first); a thread whose flag the call set
is to be woken, one whose deltas the call committed itself is not.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from threadfold.core.results import Appended, Delta
from threadfold.workers.ingest.prepare import Prepared
from threadfold.workers.metrics import Metrics, record_commits
from threadfold.workers.redisio.client import Call
from threadfold.workers.settings import Settings
from threadfold.workers.storage import ingest


def group(prepared: Sequence[Prepared]) -> dict[str, list[int]]:
    """Indices per thread, in order: each thread's deltas are appended in this order."""
    groups: dict[str, list[int]] = {}
    for i, p in enumerate(prepared):
        groups.setdefault(p.ref, []).append(i)
    return groups


def thread_opts(prepared: Sequence[Prepared], indices: Sequence[int]) -> bytes:
    """A thread's opts in a call: the first of its deltas' that has any (the metadata
    of a delta that creates the thread; later deltas find it created)."""
    for i in indices:
        if prepared[i].opts:
            return prepared[i].opts
    return b""


def calls(
    settings: Settings, prepared: Sequence[Prepared], groups: dict[str, list[int]]
) -> tuple[list[Call], list[list[str]]]:
    """The ingest calls, and the threads each one carries."""
    ks = settings.keyspace
    shares = ingest.groups_of(ks, list(groups), settings.cluster)
    made = [
        ingest.call(
            ks,
            [
                (
                    ref,
                    [
                        (
                            prepared[i].delta_id,
                            prepared[i].payload,
                            prepared[i].mentioned,
                            prepared[i].records,
                        )
                        for i in groups[ref]
                    ],
                    thread_opts(prepared, groups[ref]),
                )
                for ref in share
            ],
            settings.dedupe_ms,
            settings.wake_ttl_ms,
            here(settings),
        )
        for share in shares
    ]
    return made, shares


def here(settings: Settings) -> ingest.Here:
    """What a commit by the ingest script keeps: as a worker's (Drainer._plan)."""
    return ingest.Here(settings.retention_ms, settings.feed_limits, settings.thread_ttl_ms,
                       settings.cluster)


def outcomes(
    deltas: Sequence[Delta],
    prepared: Sequence[Prepared],
    groups: dict[str, list[int]],
    shares: Sequence[list[str]],
    answers: Sequence[Any],
    *,
    metrics: Metrics | None = None,
) -> tuple[list[Appended], list[str]]:
    """Each delta's outcome, and the threads to wake; the commits the calls made
    themselves are counted in ``metrics`` (as a worker counts its own)."""
    results: list[Appended | None] = [None] * len(deltas)
    woken: list[str] = []
    committed: list[int] = []  # entries per thread committed by the call
    for share, raw in zip(shares, answers, strict=True):
        parsed = ingest.parse(raw, [len(groups[ref]) for ref in share])
        for ref, answer in zip(share, parsed, strict=True):
            if answer.woke:
                woken.append(ref)
            elif answer.committed:
                committed.append(sum(answer.new))
            for i, version, new in zip(groups[ref], answer.versions, answer.new, strict=True):
                ids = prepared[i].ids
                results[i] = Appended(deltas[i].thread_id, version, len(ids), not new, ids)
    if committed and metrics is not None:
        count_commits(metrics, committed)
    return [r for r in results if r is not None], woken


def count_commits(metrics: Metrics, committed: Sequence[int]) -> None:
    """Commits made by ingest calls, each of the entries it applied, in the workers'
    counters (and apart in ``ingest_commits``): visible in the script that appended
    them, 0 ms after."""
    metrics.add("ingest_commits", len(committed))
    record_commits(metrics, Counter(committed), {0: sum(committed)})


def create_call(
    settings: Settings,
    p: Prepared,
    metadata: Sequence[str | bytes],
    identity: str = "",
    expect: str | None = None,
) -> Call:
    """One delta appended only if its thread does not exist (a copy's first); a thread
    made by the copy of the same ``identity`` answers with the version it made. With
    ``expect``, only if the thread's last append made that version instead."""
    opts = ingest.options(
        metadata, only_new=expect is None, identity=identity, expect=expect
    )
    thread = (p.ref, [(p.delta_id, p.payload, p.mentioned, p.records)], opts)
    return ingest.call(
        settings.keyspace, [thread], settings.dedupe_ms, settings.wake_ttl_ms, here(settings)
    )


def created(delta: Delta, p: Prepared, raw: Any) -> tuple[Appended | None, list[str]]:
    """The created thread's delta (None when it existed), and the threads to wake."""
    [answer] = ingest.parse(raw, [1])
    if answer.exists or answer.moved:
        return None, []
    done = Appended(delta.thread_id, answer.versions[0], len(p.ids), not answer.new[0], p.ids)
    return done, [p.ref] if answer.woke else []

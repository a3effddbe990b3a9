"""Batch recomputation, the workers' side: replay threads from their logs in slices.

``audit`` compares each thread's replay with its live state; ``dry-run`` reports what a
rebuild would change (messages added, removed, changed) and writes nothing; ``rebuild``
replaces a differing live state with the replay (fenced like a commit). A thread whose
log no longer holds its whole history is *not replayable* and is left as it is
(:mod:`threadfold.workers.replay.replay` reads each log prefix consistently and says so).

Each Celery task runs one slice of a job's threads and records one result per thread
in the job's hash (:mod:`threadfold.workers.ops.recompute_job` is the operator's side, which sends
the
slices and waits for the results). While it runs, a slice is listed in the job's slices
hash, so that the waiting side can tell a slice the hard time limit killed (listed long
past the limit, threads unreported) from one still queued. A slice works through its
threads a few at a time and hands those it has not reached to a fresh task after half
the soft time limit. Should the soft limit still strike, the threads in hand are sent
again one per task, and a thread that alone outlasts the limit is recorded as failed,
saying so: no thread of a job goes unaccounted for.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Final, Literal, NamedTuple

import msgspec
from celery import Celery
from celery.exceptions import SoftTimeLimitExceeded

from threadfold.workers.replay.replay import Audit, NotReplayable, Reason, audit_many, rebuild_many
from threadfold.workers.settings import Settings
from threadfold.workers.storage.store import Store

RECOMPUTE_TASK: Final = "threadfold.recompute"
Mode = Literal["audit", "dry-run", "rebuild"]
Outcome = Literal["matched", "differs", "rebuilt", "not replayable", "failed"]
OUTCOMES: Final[tuple[Outcome, ...]] = ("matched", "differs", "rebuilt", "not replayable", "failed")
JOB_TTL_SECONDS: Final = 86_400
#: Differences of a thread a result keeps (the first ones): enough to see what differs.
DIFFERENCES_KEPT: Final = 5
#: Threads recomputed together (their reads pipelined), between two looks at the clock.
CHUNK: Final = 10


class ThreadResult(msgspec.Struct, frozen=True, omit_defaults=True):
    """One thread's outcome in a job: replayed log entries and the version compared; for
    a difference, what a rebuild changes (or changed); for the others, why."""

    outcome: Outcome
    entries: int = 0
    version: str = ""
    added: int = 0
    removed: int = 0
    changed: int = 0
    differences: list[str] = msgspec.field(default_factory=list)
    reason: str = ""


_ENCODE: Final = msgspec.json.Encoder()
RESULT: Final = msgspec.json.Decoder(ThreadResult)


def encode(result: ThreadResult) -> bytes:
    return _ENCODE.encode(result)


def result_of(found: Audit | NotReplayable) -> ThreadResult:
    """A thread's result from what audit_many / rebuild_many answered for it."""
    if isinstance(found, NotReplayable):
        why = str(found).removeprefix(f"thread {found.ref}: ")  # the summary names it
        if found.reason in (Reason.TRIMMED, Reason.BEFORE_BIRTH):
            return ThreadResult("not replayable", reason=why)
        if found.reason in (Reason.NEVER_WRITTEN, Reason.DELETED):
            return ThreadResult("failed", reason="no such thread (never written, or deleted)")
        return ThreadResult("failed", reason=why)  # a poison entry, or it kept moving
    if not found.differences:
        return ThreadResult("matched", found.entries, found.version)
    return ThreadResult(
        "rebuilt" if found.rebuilt else "differs",
        found.entries,
        found.version,
        found.added,
        found.removed,
        found.changed,
        found.differences[:DIFFERENCES_KEPT],
    )


def recompute(
    store: Store, refs: Sequence[str], mode: Mode, *, merge_chunks: bool
) -> list[ThreadResult]:
    """Audit, dry-run or rebuild these threads; one result each, in order. When the
    call itself fails (a stored page that cannot be read, Redis unreachable), the
    threads go again one by one, so that only the thread at fault fails, with why."""
    run = rebuild_many if mode == "rebuild" else audit_many
    try:
        return [result_of(found) for found in run(store, refs, merge_chunks=merge_chunks)]
    except SoftTimeLimitExceeded:
        raise
    except Exception as exc:  # noqa: BLE001  # the thread's result, not the slice's end
        if len(refs) > 1:
            return [
                r for ref in refs for r in recompute(store, [ref], mode, merge_chunks=merge_chunks)
            ]
        return [ThreadResult("failed", reason=f"{_name(exc)}: {exc}")]


def _name(exc: Exception) -> str:
    """An exception's class as its module names it (``struct.error``, ``ValueError``)."""
    kind = type(exc)
    return (
        kind.__qualname__
        if kind.__module__ == "builtins"
        else f"{kind.__module__}.{kind.__qualname__}"
    )


class Slice(NamedTuple):
    """A part of a recompute job, as its task carries it: the job, the slice's own id
    (a slice that hands threads over names its child after itself), its threads, and
    what to do with them."""

    job_id: str
    slice_id: str
    refs: list[str]
    mode: Mode


def send(app: Celery, settings: Settings, part: Slice, producer: object = None) -> None:
    """Send one slice as a task (also how a slice hands its remaining threads over)."""
    job_id, slice_id, refs, mode = part
    app.send_task(
        RECOMPUTE_TASK,
        args=[job_id, slice_id, refs, mode],
        queue=settings.queue,
        producer=producer,
        # Not every ref in the workers' logs: the first and how many.
        argsrepr=f"[{job_id!r}, {slice_id!r}, [{refs[0]!r}, ... {len(refs)} threads], {mode!r}]",
    )


Resend = Callable[[str, list[str]], None]


def run_slice(
    store: Store,
    settings: Settings,
    part: Slice,
    resend: Resend,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """The task body: one result per thread of the slice, in the job's hash.

    ``resend(slice_id, refs)`` sends threads this slice hands over as a new slice. A
    slice stops listing itself *before* it hands threads over: should it die in between,
    they are left for the waiting side's timeout to name, never reported failed while
    another task still recomputes them.
    """
    client, ks = store.client, store.keyspace
    job_id, slice_id, refs, mode = part
    results, slices = ks.job(job_id), ks.job_slices(job_id)
    todo = list(refs)
    chunk: list[str] = []
    hand_over_at = clock() + settings.task_soft_time_limit / 2
    try:
        # A run id: a slice redelivered and run again is a new run to the waiting side.
        client.hset(slices, slice_id, json.dumps({"refs": todo, "run": uuid.uuid4().hex}))
        client.expire(slices, JOB_TTL_SECONDS)
        while todo and not (clock() >= hand_over_at and len(todo) < len(refs)):
            chunk = todo[:CHUNK]
            done = recompute(store, chunk, mode, merge_chunks=settings.merge_chunks)
            client.hset(
                results, mapping={ref: encode(r) for ref, r in zip(chunk, done, strict=True)}
            )
            del todo[: len(chunk)]
            chunk = []
        client.expire(results, JOB_TTL_SECONDS)
        client.hdel(slices, slice_id)
        if todo:  # half the soft limit is spent: the rest go to a fresh task
            resend(_child(slice_id), todo)
    except SoftTimeLimitExceeded:
        _stopped(store, settings, part, chunk, todo[len(chunk) :], resend)


def _stopped(  # noqa: PLR0917  # the slice, where it stopped, and how to hand over
    store: Store,
    settings: Settings,
    part: Slice,
    chunk: list[str],
    rest: list[str],
    resend: Resend,
) -> None:
    """The soft limit struck while ``chunk`` was in hand: alone, its thread failed (kept
    if its result was written after all); several, each goes again in a task of its own,
    to find the one too slow. The threads after it go to a fresh task."""
    job_id, slice_id = part.job_id, part.slice_id
    again = [[ref] for ref in chunk] if len(chunk) > 1 else []
    if len(chunk) == 1:
        stopped = ThreadResult(
            "failed",
            reason=f"stopped by the task's soft time limit ({settings.task_soft_time_limit:g}"
            " s) while recomputing this thread alone",
        )
        store.client.hsetnx(store.keyspace.job(job_id), chunk[0], encode(stopped))
    store.client.expire(store.keyspace.job(job_id), JOB_TTL_SECONDS)
    store.client.hdel(store.keyspace.job_slices(job_id), slice_id)
    for refs in [*again, rest] if rest else again:
        resend(_child(slice_id), refs)


def _child(slice_id: str) -> str:
    return f"{slice_id}.{uuid.uuid4().hex[:8]}"

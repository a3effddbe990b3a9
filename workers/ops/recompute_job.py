"""Batch recomputation, the operator's side: choose threads, send the slices, wait.

The waiting side knows how many results to expect (one per distinct thread) and stops
the moment they are in. A slice the hard time limit killed (or whose worker died) is
told from a queued one by the job's slices hash (:mod:`threadfold.workers.runtime.recompute`):
listed for
longer than the hard limit with threads unreported, it will not report them; they are
recorded as failed, by name. On the timeout, the threads still missing are named.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

from celery import Celery

from threadfold.core.errors import ThreadfoldError
from threadfold.core.keys import DEFAULT_TENANT, InvalidName, check_name, make_ref
from threadfold.workers.redisio.client import text
from threadfold.workers.runtime.recompute import (
    JOB_TTL_SECONDS,
    OUTCOMES,
    RESULT,
    Mode,
    Slice,
    ThreadResult,
    encode,
    send,
)
from threadfold.workers.settings import Settings
from threadfold.workers.storage.store import Store

#: Threads per task: a slice is short next to the time limits, and spreads over workers.
PER_TASK: Final = 50


class SelectionError(ThreadfoldError, ValueError):
    """Raised for a selection of threads that is empty, conflicting or malformed."""


def select(
    store: Store,
    threads: Sequence[str],
    *,
    tenant: str | None = None,
    prefix: str | None = None,
    every: bool = False,
) -> list[str]:
    """The refs a job covers, each once: ``threads`` by name (``id`` of the default
    tenant, or ``tenant/id``), or every stored thread narrowed by tenant and/or id
    prefix, or every stored thread. Conflicting selectors are refused, not ignored."""
    if threads and (tenant is not None or prefix is not None or every):
        raise SelectionError(
            "--threads names the threads itself: it cannot be combined with --prefix, "
            "--tenant or --all (write tenant/id in --threads for another tenant's thread)"
        )
    if every and (tenant is not None or prefix is not None):
        raise SelectionError(
            "--all selects every thread: it cannot be combined with --prefix or --tenant"
        )
    if not (threads or tenant is not None or prefix is not None or every):
        raise SelectionError("choose threads: --threads, --prefix, --tenant or --all")
    if threads:
        return list(dict.fromkeys(_ref(name) for name in threads))
    try:
        if tenant is not None:
            check_name(tenant, "--tenant")
    except InvalidName as exc:
        raise SelectionError(str(exc)) from None
    refs = store.threads(range(store.keyspace.buckets))
    if tenant is not None:
        refs = [r for r in refs if r.startswith(f"{tenant}/")]
    if prefix is not None:
        refs = [r for r in refs if r.split("/", 1)[1].startswith(prefix)]
    return refs


def _ref(name: str) -> str:
    tenant, _, thread = name.rpartition("/")
    try:
        return make_ref(tenant or DEFAULT_TENANT, thread)
    except InvalidName as exc:
        raise SelectionError(f"--threads: {exc}") from None


def start(
    app: Celery, settings: Settings, refs: Sequence[str], mode: Mode, per_task: int = PER_TASK
) -> str:
    """Send the job's slices; returns the job id."""
    job_id = uuid.uuid4().hex
    with app.producer_or_acquire() as producer:
        for n, i in enumerate(range(0, len(refs), per_task)):
            part = Slice(job_id, f"s{n}", list(refs[i : i + per_task]), mode)
            send(app, settings, part, producer)
    return job_id


@dataclass
class Summary:
    """A job as the waiting side ends it: each thread's result, the threads that never
    reported (on the timeout), and the time it took."""

    refs: list[str]
    results: dict[str, ThreadResult]
    missing: list[str]
    seconds: float

    def of(self, outcome: str) -> list[tuple[str, ThreadResult]]:
        return [(ref, r) for ref, r in self.results.items() if r.outcome == outcome]

    @property
    def entries(self) -> int:
        """Log entries replayed, over every thread."""
        return sum(r.entries for r in self.results.values())

    @property
    def rate(self) -> float:
        """Deltas replayed per second of the job's wall time."""
        return self.entries / self.seconds if self.seconds > 0 else 0.0


@dataclass
class _Slices:
    """The waiting side's view of the running slices: when it first saw each run."""

    hard_limit: float
    killed_after: float
    seen: dict[tuple[str, str], float] = field(default_factory=dict)
    given_up: set[tuple[str, str]] = field(default_factory=set)


#: How often :func:`wait` looks at a job's results (seconds).
POLL_INTERVAL: Final = 0.25


def wait(  # noqa: PLR0917  # the job and how to wait for it
    store: Store,
    settings: Settings,
    job_id: str,
    refs: Sequence[str],
    progress: Callable[[int, int], None],
    timeout: float,
) -> Summary:
    """Poll the job until every thread has its result (or ``timeout``)."""
    client, ks = store.client, store.keyspace
    results = ks.job(job_id)
    clock = time.monotonic
    total, started = len(refs), clock()
    # A slice still listed this long after it was first seen was stopped by the hard
    # limit (its worker's parent kills it) or lost its worker: it will not report.
    limit = settings.task_time_limit
    slices = _Slices(limit, killed_after=limit + max(2.0, 0.1 * limit))
    while True:
        done = int(client.hlen(results))
        progress(done, total)
        if done >= total or clock() - started >= timeout:
            break
        _give_up_on_killed(store, job_id, slices, clock)
        time.sleep(POLL_INTERVAL)
    raw = client.hgetall(results)
    found = {text(ref): RESULT.decode(value) for ref, value in raw.items()}
    ordered = {ref: found[ref] for ref in refs if ref in found}
    missing = [ref for ref in refs if ref not in found]
    return Summary(list(refs), ordered, missing, clock() - started)


def _give_up_on_killed(
    store: Store, job_id: str, slices: _Slices, clock: Callable[[], float]
) -> None:
    client, ks = store.client, store.keyspace
    now = clock()
    for slice_id, value in client.hgetall(ks.job_slices(job_id)).items():
        marker = json.loads(value)
        run = (text(slice_id), str(marker["run"]))
        first = slices.seen.setdefault(run, now)
        if now - first < slices.killed_after or run in slices.given_up:
            continue
        slices.given_up.add(run)
        refs: list[str] = marker["refs"]
        lost = ThreadResult(
            "failed",
            reason=f"its task ended without reporting it: stopped by the hard time limit "
            f"({slices.hard_limit:g} s), or its worker died",
        )
        results = ks.job(job_id)
        for ref, held in zip(refs, client.hmget(results, refs), strict=True):
            if held is None:  # a result the slice still writes replaces this one
                client.hsetnx(results, ref, encode(lost))
        client.expire(results, JOB_TTL_SECONDS)


#: Threads of each outcome the report names (the counts cover them all).
NAMED: Final = 200


def report(summary: Summary, mode: Mode, timeout: float) -> list[str]:
    """The summary's lines: the counts per outcome and the rate, then every thread that
    did not simply match, with what differs (and what a rebuild changes) or why."""
    counts = {o: len(summary.of(o)) for o in OUTCOMES}
    head = f"{mode}{' (nothing written)' if mode == 'dry-run' else ''}: "
    n = len(summary.refs)
    head += f"{n} thread{'' if n == 1 else 's'}: " + ", ".join(
        f"{counts[o]} {o}" for o in OUTCOMES if counts[o] or o in ("matched", "failed")
    )
    if summary.missing:
        head += f", {len(summary.missing)} without a result"
    head += (
        f"; {summary.entries:,} deltas replayed in {summary.seconds:.1f} s "
        f"({summary.rate:,.0f} deltas/s)"
    )
    out = [head]
    label = {"differs": "would change" if mode == "dry-run" else "differs"}
    for outcome in OUTCOMES[1:]:
        found = summary.of(outcome)
        for ref, r in found[:NAMED]:
            if r.reason:
                detail = r.reason
            else:
                detail = f"{r.added} added, {r.removed} removed, {r.changed} changed"
                detail += f" (version {r.version}): {'; '.join(r.differences)}"
            out.append(f"  {label.get(outcome, outcome)}: {ref}: {detail}")
        if len(found) > NAMED:
            out.append(f"  ... and {len(found) - NAMED} more {outcome}")
    if summary.missing:
        named = ", ".join(summary.missing[:NAMED])
        more = len(summary.missing) - NAMED
        out.append(
            f"  no result within --timeout {timeout:g} s (still queued or running): {named}"
            + (f" ... and {more} more" if more > 0 else "")
        )
    return out


def exit_code(summary: Summary, mode: Mode) -> int:
    """1 when a thread failed or has no result, or an audit found a difference; else 0
    (a dry run's differences are its answer; not replayable is a fact, not a failure)."""
    if summary.missing or summary.of("failed"):
        return 1
    return 1 if mode == "audit" and summary.of("differs") else 0

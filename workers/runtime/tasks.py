"""The Celery tasks: drain one thread, sweep for stalled threads and expired ones."""

from __future__ import annotations

import atexit
import logging
import threading
import time
from dataclasses import dataclass
from functools import cached_property

from celery import Celery
from celery.signals import worker_process_shutdown

from threadfold.core.errors import RedisFull
from threadfold.core.keys import Keyspace
from threadfold.workers import wiring
from threadfold.workers.runtime.app import DRAIN_TASK, SWEEP_TASK, CeleryWaker
from threadfold.workers.runtime.drain import Drainer, DrainReport
from threadfold.workers.runtime.recompute import RECOMPUTE_TASK, Mode, Slice, run_slice, send
from threadfold.workers.settings import Settings
from threadfold.workers.storage.store import Store

log = logging.getLogger("threadfold.tasks")


@dataclass
class Runtime:
    """Per-process resources, made on first use (after the prefork pool has forked)."""

    app: Celery
    settings: Settings

    @cached_property
    def store(self) -> Store:
        return wiring.store(self.settings)

    @cached_property
    def drainer(self) -> Drainer:
        drainer = Drainer(self.store, self.settings)
        # Counters reach Redis even when the worker goes idle after a burst.
        threading.Thread(target=_flush_forever, args=(drainer,), daemon=True).start()
        _flush_at_exit(drainer)
        return drainer

    @cached_property
    def waker(self) -> CeleryWaker:
        return wiring.waker(self.settings, self.app)


def _flush_forever(drainer: Drainer) -> None:
    while True:
        time.sleep(drainer.metrics.every)
        drainer.flush_metrics()


def _flush_at_exit(drainer: Drainer) -> None:
    """A graceful exit adds what its last interval counted to the totals. A prefork pool
    child leaves through os._exit, which skips atexit: Celery's worker_process_shutdown,
    sent in the child, is its last word; atexit covers the solo and threads pools."""

    def close(**_: object) -> None:
        try:
            drainer.metrics.close(drainer.store.client)
        except Exception:  # an exit goes on without its last counts
            log.warning("could not flush metrics at exit", exc_info=True)

    worker_process_shutdown.connect(close, weak=False)
    atexit.register(close)


def drain_once(runtime: Runtime, refs: list[str] | str) -> list[DrainReport]:
    """One wake-up task: drain its threads together within one time budget; threads
    not finished when it runs out go to a fresh task, so one hot thread never holds a
    worker for long."""
    todo = [refs] if isinstance(refs, str) else list(dict.fromkeys(refs))
    drainer = runtime.drainer
    reports = drainer.drain_many(todo, drainer.clock() + runtime.settings.drain_seconds)
    later = [report.ref for report in reports if report.handed_off]
    if later:
        drainer.metrics.add("handoffs", len(later))
        full = sum(report.full for report in reports)
        if full:
            log.warning("Redis is full: %d thread(s) wait for memory in a new wake-up", full)
        try:
            runtime.waker.wake(later)
        except Exception:  # the broker refused (full) or is unreachable
            # Their flags stay set until the lease lapses; then the sweeper wakes them.
            log.warning(
                "could not hand off %d thread(s); the sweeper will", len(later), exc_info=True
            )
    if drainer.metrics.due():
        drainer.flush_metrics()
    return reports


def sweep_once(runtime: Runtime) -> list[str]:
    """Re-wake threads with a backlog and no live wake-up flag; returns the refs woken."""
    ks: Keyspace = runtime.settings.keyspace
    # A thread's wake-up flag is set when its backlog starts (or later) and leases for
    # wake_ttl, so only a thread dirty for longer can have lost it: younger ones are
    # skipped (a busy deployment has many, each a WAKE call that would find its flag).
    # A clock behind Redis's delays a recovery by the difference, never loses one.
    older_than = int(time.time() * 1000) - runtime.settings.wake_ttl_ms
    dirty = runtime.store.dirty(range(ks.buckets), older_than_ms=older_than)
    try:
        woken = runtime.store.wake_if_stalled(dirty, runtime.settings.wake_ttl_ms)
    except RedisFull:
        # Setting a flag is a write, so no thread can be woken (nor drained) while Redis
        # is full; the next sweep tries again, a sweep period after memory is freed.
        log.warning("Redis is full: the sweeper could not wake %d stalled thread(s)", len(dirty))
        return []
    if woken:
        log.info("sweeper woke %d stalled thread(s)", len(woken))
        runtime.waker.wake(woken)
    return woken


def expire_once(runtime: Runtime) -> list[str]:
    """One TTL sweep: the next ``expire_buckets_per_sweep`` buckets, round robin (a shared
    counter, so sweeps of several beats or a restarted one go on where the last
    stopped), each removing at most its share of ``expire_per_sweep`` threads. Returns
    the refs removed."""
    settings = runtime.settings
    ks = settings.keyspace
    width = min(settings.expire_buckets_per_sweep, ks.buckets)
    try:
        end = int(runtime.store.client.incrby(ks.sweep_cursor, width))
        buckets = [(end - width + i) % ks.buckets for i in range(width)]
        share = max(1, settings.expire_per_sweep // width)
        swept = runtime.store.expire(buckets, share, settings.thread_ttl_ms)
    except RedisFull:
        # The sweep's writes are removals, but INCRBY is refused first: the next sweep
        # tries again (and an evicting Redis is refused at start, docs/operations.md).
        log.warning("Redis is full: the TTL sweep could not run")
        return []
    removed = [ref for bucket in swept for ref in bucket.removed]
    if removed:
        runtime.drainer.metrics.add("threads_expired", len(removed))
        log.info("TTL sweep removed %d idle thread(s)", len(removed))
    return removed


def register(app: Celery, settings: Settings) -> Runtime:
    """Register the tasks on ``app``; returns the runtime the tasks use (the checks of
    a worker's or beat's start are threadfold.workers.runtime.worker's)."""
    runtime = Runtime(app, settings)

    def drain(refs: list[str] | str) -> None:
        drain_once(runtime, refs)

    def sweep() -> None:
        sweep_once(runtime)
        expire_once(runtime)

    def recompute(job_id: str, slice_id: str, refs: list[str], mode: Mode) -> None:
        part = Slice(job_id, slice_id, refs, mode)

        def resend(new_slice: str, rest: list[str]) -> None:
            send(app, runtime.settings, part._replace(slice_id=new_slice, refs=rest))

        run_slice(runtime.store, runtime.settings, part, resend)

    app.task(name=DRAIN_TASK, acks_late=True, reject_on_worker_lost=True, ignore_result=True)(drain)
    app.task(name=SWEEP_TASK, ignore_result=True)(sweep)
    # Within the global time limits: jobs are cut into small slices, a slice hands what
    # it has not reached to a fresh task after half the soft limit
    # (threadfold.workers.runtime.recompute),
    # and a slice run twice is harmless (an audit reads; a rebuild is fenced by the cursor).
    app.task(name=RECOMPUTE_TASK, acks_late=True, ignore_result=True)(recompute)

    return runtime

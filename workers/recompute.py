"""Batch recomputation: replay threads from their logs as Celery jobs over the workers.

``audit`` compares each thread's replay with its live state; ``rebuild`` replaces the
live state with the replay (fenced by the cursor, like a commit). Each task handles a
slice of the threads and writes one JSON result per thread into the job's hash, which
the command line polls for its progress bar and summary.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from celery import Celery

from core.keys import DEFAULT_TENANT
from workers.ops import text
from workers.replay import NotReplayable, audit, rebuild
from workers.settings import Settings
from workers.store import Store

RECOMPUTE_TASK = "threadfold.recompute"
Mode = Literal["audit", "rebuild"]
JOB_TTL_SECONDS = 86_400


def recompute_slice(
    store: Store, settings: Settings, job_id: str, refs: Sequence[str], mode: Mode
) -> None:
    """The task body: audit or rebuild each thread, recording one result per thread."""
    job = store.keyspace.job(job_id)
    for ref in refs:
        try:
            run = rebuild if mode == "rebuild" else audit
            found = run(store, ref, merge_chunks=settings.merge_chunks)
            result = {
                "entries": found.entries,
                "differences": found.differences,
                "version": found.version,
            }
        except NotReplayable as exc:
            result = {"entries": 0, "differences": [], "error": str(exc)}
        store.client.hset(job, ref, json.dumps(result))
    store.client.expire(job, JOB_TTL_SECONDS)


def select(store: Store, ids: Sequence[str], tenant: str | None, prefix: str | None) -> list[str]:
    """Thread refs by explicit ids (of ``tenant``), by tenant and/or id prefix, or all."""
    if ids:
        return [f"{tenant or DEFAULT_TENANT}/{thread}" for thread in ids]
    refs = store.threads(range(store.keyspace.buckets))
    if tenant is not None:
        refs = [r for r in refs if r.startswith(f"{tenant}/")]
    if prefix is not None:
        refs = [r for r in refs if r.split("/", 1)[1].startswith(prefix)]
    return refs


@dataclass
class Summary:
    """What a finished job reports."""

    threads: int
    entries: int
    seconds: float
    differing: list[tuple[str, list[str]]]
    errors: list[tuple[str, str]]

    @property
    def rate(self) -> float:
        return self.entries / self.seconds if self.seconds > 0 else 0.0


def start(
    app: Celery, settings: Settings, refs: Sequence[str], mode: Mode, per_task: int = 50
) -> str:
    """Send the job's tasks; returns the job id."""
    job_id = uuid.uuid4().hex
    with app.producer_or_acquire() as producer:
        for i in range(0, len(refs), per_task):
            app.send_task(
                RECOMPUTE_TASK,
                args=[job_id, list(refs[i : i + per_task]), mode],
                queue=settings.queue,
                producer=producer,
            )
    return job_id


def wait(  # noqa: PLR0917
    store: Store,
    job_id: str,
    total: int,
    progress: Callable[[int, int], None],
    timeout: float,
    interval: float = 0.25,
) -> Summary:
    """Poll the job's results until every thread reported (or ``timeout``)."""
    job = store.keyspace.job(job_id)
    started = time.monotonic()
    done = 0
    while done < total and time.monotonic() - started < timeout:
        done = int(store.client.hlen(job))
        progress(done, total)
        if done < total:
            time.sleep(interval)
    return _summary(store.client.hgetall(job), time.monotonic() - started)


def _summary(raw: dict[bytes | str, bytes | str], seconds: float) -> Summary:
    entries, differing, errors = 0, [], []
    for ref, value in sorted(raw.items()):
        result = json.loads(value)
        entries += result["entries"]
        if result.get("error"):
            errors.append((text(ref), result["error"]))
        elif result["differences"]:
            differing.append((text(ref), result["differences"]))
    return Summary(len(raw), entries, seconds, differing, errors)

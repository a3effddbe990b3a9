"""CPU spent per process: process trees from the operating system (psutil), a Redis
server from its own ``INFO cpu``, and the whole machine's busy time.

The benchmarks report each side's CPU per delta beside the rates, because on a shared
two-core machine a rate also counts the time spent waiting for a core. A tree is a
process and its live descendants (a Celery worker and its pool, uvicorn and its
workers); what exited meanwhile is no longer counted, as before.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from contextlib import suppress
from typing import Protocol

import psutil
import redis

#: A process vanishing between listing and reading is simply not counted.
_GONE = (psutil.NoSuchProcess, psutil.AccessDenied)


class HasPid(Protocol):
    @property
    def pid(self) -> int: ...


def _tree(root: int) -> list[psutil.Process]:
    try:
        top = psutil.Process(root)
        return [top, *top.children(recursive=True)]
    except _GONE:
        return []


def tree_times(root: int) -> tuple[float, float]:
    """User + system and system-only CPU seconds of ``root`` and its live descendants."""
    total = system = 0.0
    for process in _tree(root):
        with suppress(*_GONE):
            times = process.cpu_times()
            total += times.user + times.system
            system += times.system
    return total, system


def tree_cpu(root: int) -> float:
    """User + system CPU seconds of a live process and its live descendants."""
    return tree_times(root)[0]


def processes_cpu(processes: Iterable[HasPid]) -> float:
    return sum(tree_cpu(p.pid) for p in processes)


def machine_busy() -> float:
    """CPU seconds every core of the machine has spent busy since boot (not idle, not
    waiting for I/O)."""
    t = psutil.cpu_times()
    return t.user + t.nice + t.system + t.irq + t.softirq + t.steal


def redis_cpu(client: redis.Redis) -> float:
    """CPU seconds the server has used (main thread and background threads)."""
    info = client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def set_affinity(roots: Iterable[int], cpus: set[int]) -> None:
    """Every thread of every process in the trees under ``roots`` onto ``cpus`` (a
    process's affinity call moves only its main thread)."""
    for root in roots:
        for process in _tree(root):
            with suppress(*_GONE):
                for thread in process.threads():
                    with suppress(ProcessLookupError, PermissionError):
                        os.sched_setaffinity(thread.id, cpus)

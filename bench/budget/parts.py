"""The pipeline's parts, measured: one part's calls sent, drained, and the CPU each
process spent meanwhile.

A part's window opens just before its first call and closes once the workers are done
with it: no thread has a backlog and no wake-up waits in the broker queue. The CPU of
every process of the stack (:meth:`bench.common.stack.Stack.cpu`) is read at both ends,
so the workers' and Redis's drain of the part is in the part's figures, whenever it
ran. This process's CPU (``time.process_time``: the client, its wake-up thread
included) is read around the sending loop only: the waiting is the harness's.

Seeing that the workers are done costs the state Redis something (a ``ZCARD`` of each
index bucket a poll): each poll's cost is measured once, while the stack is idle, and
subtracted from the Redis figure, so the figure is the pipeline's alone.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Final

from bench.budget.spread import Call
from bench.common.cpu import redis_cpu
from bench.common.stack import Cpu, Stack
from threadfold.types import Appended

#: Seconds between polls for the end of a drain: often enough to end a window soon
#: after the last commit, rarely enough that the polls cost Redis little.
POLL: Final = 0.1
#: Seconds after the last commit before the window closes: a worker still acks its task.
SETTLE: Final = 0.1
#: Polls timed while idle, to price one.
POLL_SAMPLES: Final = 20
DRAIN_TIMEOUT: Final = 300.0

Append = Callable[[str, list[dict[str, Any]]], Appended]


@dataclass(frozen=True)
class Spent:
    """One part's deltas, its wall times and each process's CPU seconds in its window."""

    deltas: int
    send_seconds: float
    settled_seconds: float
    here: float
    api: float
    workers: float
    redis: float
    broker: float
    beat: float
    polls: int

    def per_delta_us(self, cpu: float) -> float:
        return cpu / self.deltas * 1e6

    def to_json(self) -> dict[str, Any]:
        cpu = {k: self.per_delta_us(getattr(self, k))
               for k in ("here", "api", "workers", "redis", "broker", "beat")}
        return {**asdict(self), "cpu_us_per_delta": cpu,
                "sent_per_s": self.deltas / self.send_seconds,
                "settled_per_s": self.deltas / self.settled_seconds}


def poll_cost(stack: Stack) -> float:
    """The state Redis's CPU seconds for one poll of :func:`settle` (the stack idle)."""
    before = redis_cpu(stack.client)
    for _ in range(POLL_SAMPLES):
        stack.threads_with_backlog()
    return (redis_cpu(stack.client) - before) / POLL_SAMPLES


def settle(stack: Stack) -> int:
    """Until the workers are done with what was sent; the polls it took."""
    deadline, polls = time.monotonic() + DRAIN_TIMEOUT, 0
    while True:
        stack.check_alive()
        polls += 1
        if (stack.threads_with_backlog() == 0
                and stack.broker.llen(stack.settings.queue) == 0):
            time.sleep(SETTLE)
            return polls
        if time.monotonic() >= deadline:
            raise TimeoutError(f"the workers did not drain in {DRAIN_TIMEOUT:g}s")
        time.sleep(POLL)


def _send(append: Append, sent: Sequence[Call]) -> tuple[list[Appended], float, float]:
    """Every call, one at a time: the answers, the wall and this process's CPU seconds.

    The planned deltas are the harness's: frozen out of the collector's way, as
    bench.pipeline.e2e does, so a full collection does not walk them on the clock."""
    gc.collect()
    gc.freeze()
    try:
        wall, cpu = time.perf_counter(), time.process_time()
        answers = [append(thread, messages) for thread, messages in sent]
        return answers, time.perf_counter() - wall, time.process_time() - cpu
    finally:
        gc.unfreeze()


def measure(stack: Stack, api: str, append: Append, sent: Sequence[Call], *,
            per_poll: float) -> tuple[Spent, list[Appended]]:
    """One part: ``sent`` through ``append``, drained; its :class:`Spent` and answers."""
    before = stack.cpu()
    started = time.perf_counter()
    answers, send_seconds, here = _send(append, sent)
    polls = settle(stack)
    settled = time.perf_counter() - started
    used: Cpu = stack.cpu().minus(before)
    spent = Spent(len(sent), send_seconds, settled, here, used.apis[api], used.workers,
                  max(used.redis - polls * per_poll, 0.0), used.broker, used.beat, polls)
    return spent, answers


def idle(stack: Stack, seconds: float) -> dict[str, float]:
    """What the stack spends doing nothing (metrics flushes, beat, Celery's own
    chatter), in CPU milliseconds a second: the background every window carries."""
    before = stack.cpu()
    time.sleep(seconds)
    used = stack.cpu().minus(before)
    rates = {"api": sum(used.apis.values()), "workers": used.workers, "redis": used.redis,
             "broker": used.broker, "beat": used.beat}
    return {k: v / used.at * 1e3 for k, v in rates.items()}

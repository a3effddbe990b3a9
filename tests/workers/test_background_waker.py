"""The synchronous producers' background waker: calls coalesced into few publishes, the
caller never waits on one, and every wake-up published, by a real Celery worker's
drains."""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import signal
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.infra.processes import wait_until
from tests.workers.harness import (
    WORKERS_ONLY,
    CountingWaker,
    make_settings,
    start_worker,
    state_dump,
    store_for,
    wait_drained,
)
from threadfold.core import dump_messages
from threadfold.testing import Ledger
from threadfold.workers.ingest.producer import Producer
from threadfold.workers.ingest.wakeup import SPACING, BackgroundWaker, CoalescingWaker
from threadfold.workers.runtime.app import CeleryWaker, make_celery


class Recording:
    """An inner waker that records each publish; ``gate`` holds publishes until set."""

    def __init__(self, fail_first: bool = False) -> None:
        self.calls: list[list[str]] = []
        self.gate = threading.Event()
        self.gate.set()
        self.entered = threading.Event()
        self.fail_first = fail_first
        self.lock = threading.Lock()
        self.began: list[float] = []  # when each publish reached us

    def wake(self, refs: Sequence[str]) -> None:
        self.entered.set()
        self.gate.wait()
        with self.lock:
            self.began.append(time.monotonic())
            self.calls.append(list(refs))
            if self.fail_first and len(self.calls) == 1:
                raise ConnectionError("broker down")

    @property
    def published(self) -> list[str]:
        return [ref for call in self.calls for ref in call]


def test_wake_ups_of_many_calls_and_threads_are_published_together_each_once() -> None:
    inner = Recording()
    waker = BackgroundWaker(inner, window=0.2)
    refs = [f"_/t{i}" for i in range(40)]

    def caller(part: list[str]) -> None:
        for ref in part:
            waker.wake([ref, refs[0]])  # refs[0] woken by every call

    callers = [threading.Thread(target=caller, args=(refs[i::4],)) for i in range(4)]
    for c in callers:
        c.start()
    for c in callers:
        c.join()
    waker.close()
    assert sorted(set(inner.published)) == sorted(refs)  # none lost
    assert all(len(call) == len(set(call)) for call in inner.calls)  # once per publish
    # 40 calls within one window: one publish (a few if a loaded machine stretched them)
    assert len(inner.calls) < 10


def _gaps(began: Sequence[float]) -> list[float]:
    return [b - a for a, b in itertools.pairwise(began)]


def test_a_steady_stream_of_wake_ups_is_published_once_a_spacing_each_once() -> None:
    """Every call wakes a thread of its own (the spread shape): the publishes are spaced,
    each carrying what came in its interval, none lost. The wait between two is at least
    SPACING whatever the machine's speed (a slower one only spaces them more)."""
    assert SPACING >= 0.01  # a window's worth of calls (1 ms apart here) would be many
    inner = Recording()
    waker = BackgroundWaker(inner, window=0.001)
    refs = [f"_/t{i}" for i in range(300)]
    for ref in refs:
        waker.wake([ref])
        time.sleep(0.001)
    waker.close()
    assert sorted(inner.published) == sorted(refs)  # each once, none lost
    assert len(inner.calls) >= 2
    assert min(_gaps(inner.began[:-1])) >= 0.9 * SPACING  # the last: close() publishes at once


def test_the_asyncio_coalescing_waker_spaces_a_steady_stream_too() -> None:
    inner = Recording()

    async def stream() -> float:
        waker = CoalescingWaker(inner, window=0.001)
        start = time.monotonic()
        for i in range(300):
            await waker.wake([f"_/t{i}"])
            await asyncio.sleep(0.001)
        await waker.close()
        return time.monotonic() - start

    took = asyncio.run(stream())
    assert sorted(inner.published) == sorted(f"_/t{i}" for i in range(300))
    # Counted, not timed: each publish runs in a thread of asyncio's pool, whose start
    # on a loaded machine lags by a varying few ms, so the gaps between the starts are
    # no measure of the spacing. Without it, a publish a window (1-5 ms): 60 or more.
    assert 2 <= len(inner.calls) <= took / SPACING + 2


def test_a_caller_never_waits_for_a_publish() -> None:
    inner = Recording()
    inner.gate.clear()  # the broker hangs
    waker = BackgroundWaker(inner, window=0.0)

    def calls() -> None:
        waker.wake(["_/a"])
        assert inner.entered.wait(10)  # the publishing thread is stuck in the broker...
        waker.wake(["_/b"])  # ...and a caller still returns at once
        waker.wake(["_/c"])

    caller = threading.Thread(target=calls)
    caller.start()
    caller.join(10)
    assert not caller.is_alive(), "a caller waited for the publish"
    assert inner.calls == []
    inner.gate.set()
    waker.close()
    assert inner.calls[0] == ["_/a"] and sorted(inner.published) == ["_/a", "_/b", "_/c"]


def test_a_failed_publish_is_logged_and_later_ones_go_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    inner = Recording(fail_first=True)
    waker = BackgroundWaker(inner, window=0.0)
    with caplog.at_level(logging.WARNING, logger="threadfold.wakeup"):
        waker.wake(["_/a"])
        wait_until(lambda: inner.calls, 10, message="the first publish did not happen")
        waker.wake(["_/b"])
        waker.close()
    assert inner.published[:1] == ["_/a"] and "_/b" in inner.published
    assert "could not publish 1 wake-up(s)" in caplog.text


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_publishing_thread_that_dies_is_replaced_and_its_refs_kept() -> None:
    class Dying(Recording):
        def wake(self, refs: Sequence[str]) -> None:
            super().wake(refs)
            if len(self.calls) == 1:
                raise SystemExit  # not an Exception: ends the thread

    inner = Dying()
    waker = BackgroundWaker(inner, window=0.0)
    waker.wake(["_/a"])
    wait_until(lambda: waker._thread is None, 10, message="the thread did not end")
    waker.wake(["_/b"])  # a new thread publishes it
    waker.close()
    assert inner.calls == [["_/a"], ["_/b"]]


def test_close_does_not_wait_out_the_window() -> None:
    inner = Recording()
    waker = BackgroundWaker(inner, window=3600.0)
    waker.wake(["_/a"])
    waker.close(timeout=60)  # returns once published, not after an hour
    assert inner.calls == [["_/a"]] and waker._thread is None


@pytest.mark.parametrize("window", [-0.001, float("nan"), float("inf"), "5", None, True])
def test_a_bad_window_is_refused_by_name(window: object) -> None:
    with pytest.raises(ValueError, match=r"^window: expected a finite number of seconds >= 0"):
        BackgroundWaker(Recording(), window=window)  # type: ignore[arg-type]


def test_after_close_a_wake_up_is_published_by_its_caller() -> None:
    inner = Recording()
    with BackgroundWaker(inner, window=5.0) as waker:
        waker.wake(["_/a"])
    assert inner.calls == [["_/a"]]  # close published it without waiting out the window
    waker.wake(["_/b"])
    assert inner.calls == [["_/a"], ["_/b"]]  # synchronously


def test_a_forked_child_publishes_its_own_wake_ups_not_the_parents() -> None:
    inner = Recording()
    inner.gate.clear()
    waker = BackgroundWaker(inner, window=0.0)
    waker.wake(["_/parent-1"])
    assert inner.entered.wait(10)  # the parent's thread is mid-publish...
    waker.wake(["_/parent-2"])  # ...with this one pending
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its own thread, none of the parent's refs
        code = 1
        try:
            # Objects of its own to publish to: the parent's recorder may have been
            # mid-call (holding its locks) at the fork.
            waker.waker = child = Recording()
            waker.wake(["_/child"])
            waker.close()
            os.write(write_end, ",".join(child.published).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    deadline = time.monotonic() + 30
    while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    if done[0] == 0:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        pytest.fail("the forked child did not finish")
    got = os.read(read_end, 1000).decode()
    os.close(read_end)
    assert os.waitstatus_to_exitcode(done[1]) == 0
    assert got == "_/child"
    inner.gate.set()
    waker.close()
    assert sorted(inner.published) == ["_/parent-1", "_/parent-2"]


def test_one_delta_per_call_from_several_threads_is_drained_by_a_real_worker(
    redis_url: str, tmp_path: Path
) -> None:
    """The producer shape the waker is for: request threads enqueueing one delta each.
    Every thread's state arrives, through far fewer Celery tasks than threads woken."""
    settings = make_settings(redis_url, **WORKERS_ONLY)
    app = make_celery(settings)
    store = store_for(settings)
    counting = CountingWaker(CeleryWaker(app, settings.queue))
    worker = start_worker(settings, "bw0", tmp_path)
    sent, lock = Ledger(), threading.Lock()
    try:
        with BackgroundWaker(counting, window=0.25) as waker:
            producer = Producer(store.client, settings, waker)

            def requests(first: int) -> None:
                for i in range(first, 400, 4):
                    message = {"role": "user", "content": f"m{i}", "id": f"id{i}"}
                    result = producer.enqueue(f"bw{i % 100}", [message])
                    with lock:
                        sent.add(f"_/bw{i % 100}", result.version, [message], result.ids)

            callers = [threading.Thread(target=requests, args=(k,)) for k in range(4)]
            for c in callers:
                c.start()
            for c in callers:
                c.join()
        wait_drained(store, sent.threads(), timeout=60)
        for ref in sent.threads():
            assert state_dump(store, ref) == dump_messages(sent.expected(ref)), ref
        assert counting.sent >= 100  # every thread woken at least once
        assert counting.publishes < counting.sent / 4
    finally:
        worker.kill()
        app.close()

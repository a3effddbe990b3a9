"""`threadfold recompute` as an operator runs it (the CLI as a subprocess, real Celery
workers): every thread ends in the summary as matched, differs, rebuilt, not replayable
or failed (with why); the command waits for exactly the results to come, and names what
a time limit or the timeout left without one."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import redis
from celery.exceptions import SoftTimeLimitExceeded

from tests.infra.processes import ManagedProcess, wait_until
from tests.infra.redis_server import RedisServer
from tests.workers.harness import ROOT, make_settings, start_worker, state_dump
from tests.workers.test_recompute import _corrupt, _written
from threadfold.core import dump_messages
from threadfold.workers.ops.processes import settings_env
from threadfold.workers.ops.progress import Progress
from threadfold.workers.runtime.recompute import RESULT, Slice, run_slice
from threadfold.workers.settings import Settings
from threadfold.workers.storage.store import Store

THREADFOLD = str(Path(sys.executable).with_name("threadfold"))


def _recompute(settings: Settings, *args: str, timeout: float = 120) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [THREADFOLD, "recompute", *args],
        env={**settings_env(settings), "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _run(settings: Settings, *args: str) -> tuple[int, str, str]:
    proc = _recompute(settings, *args)
    out, err = proc.communicate(timeout=300)
    return proc.returncode, out, err


@contextmanager
def _worker(settings: Settings, tmp_path: Path, name: str = "job") -> Iterator[ManagedProcess]:
    worker = start_worker(settings, name, tmp_path)
    try:
        yield worker
    finally:
        worker.kill()


def _snapshot(store: Store, ref: str) -> dict[str, Any]:
    """Every stored byte of a thread's state and meta."""
    k = store.keyspace.thread(ref)
    return {key: store.client.hgetall(key) for key in (k.meta, k.pages, k.index)}


def test_a_thread_named_twice_is_recomputed_once_and_the_command_ends_with_its_result(
    redis_url: str, tmp_path: Path
) -> None:
    # `--threads t,t` waited for two results that land in one field, until --timeout.
    settings = make_settings(redis_url, retention_seconds=3600)
    _written(settings, threads=2, deltas=40)
    with _worker(settings, tmp_path):
        code, out, err = _run(settings, "--audit", "--threads", "r0,r0,_/r0", "--timeout", "60")
    assert code == 0, out + err
    assert "audit: 1 thread: 1 matched, 0 failed;" in out
    # Not a terminal: the progress is plain lines, no redrawn bar.
    assert "  1/1 threads\n" in err and "\r" not in err


def test_a_dry_run_shows_what_a_rebuild_would_change_and_writes_nothing(
    redis_url: str, tmp_path: Path
) -> None:
    settings = make_settings(redis_url, retention_seconds=3600)
    store, sent = _written(settings, threads=3, deltas=90)
    bad = sorted(sent.threads())[1]
    _corrupt(store, bad)
    before = _snapshot(store, bad)
    with _worker(settings, tmp_path):
        code, out, err = _run(settings, "--rebuild", "--dry-run", "--all")
        assert code == 0, out + err
        assert "dry-run (nothing written): 3 threads: 2 matched, 1 differs, 0 failed;" in out
        assert f"  would change: {bad}: 0 added, 0 removed, 1 changed (version " in out
        assert _snapshot(store, bad) == before

        code, out, err = _run(settings, "--rebuild", "--all")
        assert code == 0, out + err
        assert "rebuild: 3 threads: 2 matched, 1 rebuilt, 0 failed;" in out
        assert f"  rebuilt: {bad}: 0 added, 0 removed, 1 changed (version " in out
    assert state_dump(store, bad) == dump_messages(sent.expected(bad))


def test_a_log_that_no_longer_reaches_its_first_entry_is_not_replayable_and_not_rebuilt(
    redis_url: str, tmp_path: Path
) -> None:
    # Written and drained at retention 0: each commit trimmed the applied entries. The
    # audit said "35 messages live, 0 replayed" and rebuild emptied the thread.
    store, sent = _written(make_settings(redis_url), threads=2, deltas=60)
    settings = make_settings(redis_url, retention_seconds=3600)
    refs = sorted(sent.threads())
    before = {ref: _snapshot(store, ref) for ref in refs}
    with _worker(settings, tmp_path):
        for mode in ("--audit", "--rebuild"):
            code, out, err = _run(settings, mode, "--all")
            assert code == 0, out + err
            assert "2 threads: 0 matched, 2 not replayable, 0 failed;" in out
            for ref in refs:
                [line] = [x for x in out.splitlines() if x.startswith(f"  not replayable: {ref}: ")]
                assert "whole history" in line
    for ref in refs:
        assert _snapshot(store, ref) == before[ref]
        assert state_dump(store, ref) == dump_messages(sent.expected(ref))


def test_a_thread_that_fails_is_named_with_why_and_the_others_are_recomputed(
    redis_url: str, tmp_path: Path
) -> None:
    settings = make_settings(redis_url, retention_seconds=3600)
    store, sent = _written(settings, threads=4, deltas=80)
    broken = sorted(sent.threads())[2]
    k = store.keyspace.thread(broken)
    store.client.hset(k.pages, 0, b"\x00" * 7 + b"\x05" + b"\x00" * 3 + b"\x09junk" + b"\xff" * 20)
    with _worker(settings, tmp_path):
        code, out, err = _run(settings, "--audit", "--all")
    assert code == 1, out + err
    assert "audit: 4 threads: 3 matched, 1 failed;" in out
    assert f"  failed: {broken}: struct.error: unpack_from requires a buffer" in out


def test_the_timeout_names_every_thread_left_without_a_result(redis_url: str) -> None:
    settings = make_settings(redis_url, retention_seconds=3600)
    _written(settings, threads=3, deltas=30)  # and no worker to take the job
    code, out, err = _run(settings, "--audit", "--all", "--timeout", "1")
    assert code == 1, out + err
    assert "audit: 3 threads: 0 matched, 0 failed, 3 without a result;" in out
    assert "no result within --timeout 1 s (still queued or running): _/r0, _/r1, _/r2" in out


@contextmanager
def _paused_once_a_slice_starts(server: RedisServer, seconds: float) -> Iterator[None]:
    """Pause writes on the server for ``seconds`` from the moment a recompute slice says
    it started (a keyspace event), so that the slice is held inside its task."""
    with server.probe() as admin:
        admin.config_set("notify-keyspace-events", "Kh")
    listener = redis.Redis.from_url(server.url)
    events = listener.pubsub()
    events.psubscribe("__keyspace@0__:*:slices")
    try:
        yield
        wait_until(
            lambda: (m := events.get_message(timeout=0.1)) is not None and m["type"] == "pmessage",
            60,
            interval=0,
            message="no recompute slice started",
        )
        with server.probe() as admin:
            admin.client_pause(int(seconds * 1000), all=False)  # writes only
    finally:
        events.close()
        listener.close()


def _limits(server: RedisServer, broker: str, soft: float, hard: float) -> Settings:
    # The broker apart from the paused server: the worker's own process, which enforces
    # the time limits, keeps talking to its broker while the slice is held.
    return make_settings(
        server.url,
        broker_url=broker,
        retention_seconds=3600,
        task_soft_time_limit=soft,
        task_time_limit=hard,
    )


def test_a_slice_stopped_by_the_soft_time_limit_is_sent_again_and_every_thread_reports(
    redis_server: RedisServer, redis_url: str, tmp_path: Path
) -> None:
    settings = _limits(redis_server, redis_url, soft=1.0, hard=6.0)
    _written(settings, threads=30, deltas=15_000)  # still reading when the pause lands
    with _worker(settings, tmp_path):
        with _paused_once_a_slice_starts(redis_server, seconds=3.0):
            job = _recompute(settings, "--audit", "--all")
        out, err = job.communicate(timeout=300)
    assert job.returncode == 0, out + err
    assert "audit: 30 threads: 30 matched, 0 failed;" in out


def test_a_thread_alone_past_the_soft_time_limit_is_failed_by_name(
    redis_server: RedisServer,
) -> None:
    # In-process, the way a pool process meets the soft limit: a signal whose handler
    # raises SoftTimeLimitExceeded, here while the slice's one thread is being read from
    # a server that holds every client (CLIENT PAUSE ALL) until after it.
    settings = make_settings(redis_server.url, retention_seconds=3600)
    store, _ = _written(settings, threads=1, deltas=20)
    sent: list[tuple[str, list[str]]] = []

    def soft_limit(signum: int, frame: object) -> None:
        raise SoftTimeLimitExceeded()

    looks = 0

    def clock() -> float:  # the slice looks at it before each group of threads
        nonlocal looks
        looks += 1
        if looks == 2:  # the first group is next: hold the server, then the limit strikes
            with redis_server.probe() as admin:
                admin.client_pause(1500, all=True)
            signal.setitimer(signal.ITIMER_REAL, 0.3)
        return time.monotonic()

    previous = signal.signal(signal.SIGALRM, soft_limit)
    try:
        part = Slice("j1", "s0", ["_/r0"], "audit")
        run_slice(store, settings, part, lambda i, r: sent.append((i, r)), clock)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    [(ref, raw)] = store.client.hgetall(store.keyspace.job("j1")).items()
    result = RESULT.decode(raw)
    assert (ref, result.outcome) == (b"_/r0", "failed")
    assert result.reason.startswith("stopped by the task's soft time limit (20 s)")
    assert sent == []  # nothing left to hand over
    assert store.client.hgetall(store.keyspace.job_slices("j1")) == {}


def test_a_slice_killed_by_the_hard_time_limit_is_reported_by_name(
    redis_server: RedisServer, redis_url: str, tmp_path: Path
) -> None:
    # Held past the hard limit, the slice's process is killed by its worker's parent
    # before it can hand anything over: its threads used to be lost without a trace, the
    # command ending on "28/60 threads". Now each is named, and why. (Those whose results
    # were written before the hold began are reported as they are.)
    settings = _limits(redis_server, redis_url, soft=1.0, hard=2.0)
    # Enough log that the audit is still reading when the pause lands: 200 deltas were
    # replayed (~100k/s) before a loaded machine let the test send CLIENT PAUSE.
    _written(settings, threads=40, deltas=20_000)
    with _worker(settings, tmp_path):
        with _paused_once_a_slice_starts(redis_server, seconds=5.0):
            job = _recompute(settings, "--audit", "--all")
        out, err = job.communicate(timeout=300)
    assert job.returncode == 1, out + err
    head = re.match(r"audit: 40 threads: (\d+) matched, (\d+) failed;", out)
    assert head is not None, out
    matched, failed = int(head[1]), int(head[2])
    why = "its task ended without reporting it: stopped by the hard time limit (2 s), or its"
    named = re.findall(rf"^  failed: (_/r\d+): {re.escape(why)} worker died$", out, re.MULTILINE)
    assert matched + failed == 40 and failed >= 1 and len(set(named)) == failed, out


def test_the_progress_is_a_bar_redrawn_in_place_on_a_terminal() -> None:
    leader, follower = os.openpty()
    with os.fdopen(follower, "w") as tty:
        progress = Progress("threads", out=tty)
        for done in (0, 1, 1, 2, 3):
            progress(done, 3)
    shown = ""
    try:
        while chunk := os.read(leader, 4096):  # until the closed terminal's end (EIO)
            shown += chunk.decode()
    except OSError:
        pass
    os.close(leader)
    assert shown.count("\r  [") == 4  # one redraw per change
    assert "[" + "#" * 30 + "] 3/3 threads" in shown and shown.endswith("\r\n")

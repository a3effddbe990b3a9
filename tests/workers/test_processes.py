"""The supervision module (threadfold.workers.ops.processes) against real processes: a group's
members start with their environment and log, are restarted when they crash, a crash
loop ends the group, stopping escalates from SIGTERM to SIGKILL, and the readiness
checks wait on the real services (redis-server with the stack's persistence, HTTP, a
Celery worker's ping)."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest
import redis

from threadfold.workers.ops.processes import (
    DURABLE,
    MAX_RESTARTS,
    CrashLoop,
    ProcessGroup,
    RedisServer,
    ServiceStartError,
    celery_answers,
    find_executable,
    free_port,
    http_ok,
    named_worker_argv,
    redis_answers,
    redis_argv,
    start_service,
    wait_until,
)
from threadfold.workers.ops.processes import group as group_module
from threadfold.workers.runtime.app import make_celery
from threadfold.workers.settings import Settings

# A child that says it started (with a variable from its environment), then waits.
SERVE = "import os, signal, sys; print('up', os.environ.get('PART'), flush=True); signal.pause()"
# Exits 1 the first time (leaving a mark), serves the next.
CRASH_ONCE = (
    "import pathlib, signal, sys; mark = pathlib.Path(sys.argv[1]); "
    "first = not mark.exists(); mark.touch(); print('start', flush=True); "
    "sys.exit(1) if first else signal.pause()"
)
# Ignores SIGTERM: only SIGKILL ends it.
STUBBORN = (
    "import signal; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); "
    "[signal.pause() for _ in iter(int, 1)]"
)


def _said(path: Path, text: str) -> bool:
    return path.exists() and text in path.read_text()


def test_members_start_with_their_env_and_log_and_stop_escalates_to_sigkill(
    tmp_path: Path,
) -> None:
    group = ProcessGroup(tmp_path / "logs", {"PART": "group"})
    polite = group.spawn("polite", [sys.executable, "-c", SERVE], {"PART": "own"})
    stubborn = group.spawn("stubborn", [sys.executable, "-c", STUBBORN])
    try:
        wait_until(lambda: _said(polite.log, "up own"), 30, message="polite did not start")
        wait_until(lambda: _said(stubborn.log, "up"), 30, message="stubborn did not start")
        group.check_alive()
    finally:
        group.stop(grace=0.5)
    assert polite.process.returncode == -signal.SIGTERM
    assert stubborn.process.returncode == -signal.SIGKILL


def test_a_crashed_member_is_restarted_once_ready_and_said(tmp_path: Path) -> None:
    group = ProcessGroup(tmp_path / "logs")
    mark = tmp_path / "mark"
    member = group.spawn(
        "flaky",
        [sys.executable, "-c", CRASH_ONCE, str(mark)],
        ready=lambda: _said(member.log, "start\nstart"),
        keeps=" with its mark",
    )
    first = member.pid
    said: list[str] = []
    try:
        wait_until(lambda: not member.process.alive, 30, message="flaky did not exit")
        group.supervise(said.append)
        assert member.pid != first and member.process.alive
        assert said == [
            f"threadfold: flaky (pid {first}) exited (exit status 1); restarted it as pid "
            f"{member.pid} with its mark"
        ]
        group.supervise(said.append)  # alive: nothing to do
        assert len(said) == 1
    finally:
        group.stop()


def test_a_part_that_keeps_exiting_ends_the_group_with_its_log(tmp_path: Path) -> None:
    group = ProcessGroup(tmp_path)
    exits = [sys.executable, "-c", "print('cannot start'); raise SystemExit(3)"]
    flaky = group.spawn("flaky", exits)
    said: list[str] = []
    try:
        for _ in range(MAX_RESTARTS):
            wait_until(lambda: not flaky.process.alive, 30, message="flaky did not exit")
            group.supervise(said.append)
        wait_until(lambda: not flaky.process.alive, 30, message="flaky did not exit")
        with pytest.raises(
            CrashLoop,
            match=rf"flaky exited \(exit status 3\) {MAX_RESTARTS + 1} "
            r"times within 60 s; log:\n(cannot start\n)+",
        ):
            group.supervise(said.append)
    finally:
        group.stop()
    assert len(said) == MAX_RESTARTS
    assert said[0].startswith("threadfold: flaky (pid ") and "exited (exit status 3)" in said[0]


def test_a_restarted_member_that_never_becomes_ready_ends_the_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(group_module, "RESTART_READY_SECONDS", 0.5)
    group = ProcessGroup(tmp_path)
    member = group.spawn("deaf", [sys.executable, "-c", "raise SystemExit(2)"], ready=lambda: False)
    try:
        wait_until(lambda: not member.process.alive, 30, message="deaf did not exit")
        member.argv = [sys.executable, "-c", SERVE]  # comes back, but never answers
        with pytest.raises(CrashLoop, match=r"deaf did not become ready within 0\.5 s"):
            group.supervise(lambda _: None)
    finally:
        group.stop()


def test_waiting_for_readiness_fails_at_once_when_a_member_exits(tmp_path: Path) -> None:
    group = ProcessGroup(tmp_path)
    group.spawn("broken", [sys.executable, "-c", "print('bad config'); raise SystemExit(4)"])
    try:
        with pytest.raises(ServiceStartError, match=r"broken exited \(4\); log:\nbad config"):
            group.wait_ready(lambda: False, "never", timeout=60)
    finally:
        group.stop()


def test_a_durable_redis_member_restarted_after_sigkill_keeps_what_it_acknowledged(
    tmp_path: Path,
) -> None:
    port = free_port()
    data = tmp_path / "redis"
    data.mkdir()
    group = ProcessGroup(tmp_path / "logs")
    member = group.spawn(
        "redis",
        redis_argv(find_executable("redis-server"), port, data, DURABLE),
        ready=lambda: redis_answers(port),
    )
    said: list[str] = []
    try:
        group.wait_ready(lambda: redis_answers(port), "redis-server")
        with redis.Redis(port=port) as client:
            assert client.config_get("appendfsync") == {"appendfsync": "always"}
            assert client.config_get("maxmemory-policy")["maxmemory-policy"] == "noeviction"
            client.set("acknowledged", "yes")
        member.process.kill()  # SIGKILL: no shutdown, no final fsync
        group.supervise(said.append)
        with redis.Redis(port=port) as client:
            assert client.get("acknowledged") == b"yes"
    finally:
        group.stop()
    assert len(said) == 1


def test_http_readiness_waits_on_a_real_server(tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    assert not http_ok(url)
    group = ProcessGroup(tmp_path / "logs")
    server = [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(port)]
    group.spawn("http", server, {"PYTHONUNBUFFERED": "1"})
    try:
        group.wait_ready(lambda: http_ok(url), "http.server")
    finally:
        group.stop()
    assert not http_ok(url)


def test_a_named_worker_answers_the_celery_readiness_ping(tmp_path: Path) -> None:
    with RedisServer() as state:
        settings = Settings(redis_url=state.url)
        worker = start_service(
            named_worker_argv(settings, "probe", loglevel="WARNING"),
            settings,
            tmp_path / "worker.log",
        )
        app = make_celery(settings)
        try:
            with worker:
                ping = celery_answers(app, ["probe"])
                wait_until(ping, 60, interval=0.1, message="the worker did not answer")
                assert celery_answers(app, ["nobody"])() is False
        finally:
            app.close()

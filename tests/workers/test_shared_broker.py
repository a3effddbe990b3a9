"""A broker on the state's Redis server is said once, with masked URLs, by the API, a
worker and beat at their start (real processes on a password-protected redis-server)."""

from __future__ import annotations

import logging
from functools import partial
from pathlib import Path

import pytest
from pydantic import SecretStr

from tests.infra.processes import ManagedProcess, wait_until
from tests.infra.redis_server import RedisServer
from tests.workers.harness import make_settings, start_api, start_beat, start_worker
from threadfold.workers.runtime.shared_broker import shares_state, warn_if_shared
from threadfold.workers.settings import Settings

SAID = "They share its memory"


def settings(state: str, broker: str | None) -> Settings:
    return make_settings(state, broker_url=None if broker is None else SecretStr(broker))


@pytest.mark.parametrize(
    ("state", "broker", "shared"),
    [
        ("redis://h:6379/0", "redis://h:6379/1", True),  # another db: the same memory
        ("redis://h:6379/0", None, True),  # unset: the broker is the state Redis
        ("redis://:pw@h/0", "rediss://u:other@H:6379/3", True),  # default port, any case
        ("redis://localhost:7000/0", "redis://127.0.0.1:7000/1", True),  # one loopback
        ("unix:///run/redis.sock?db=0", "unix:///run/redis.sock?db=1", True),
        ("redis://h:6379/0", "redis://h:6380/0", False),
        ("redis://h:6379/0", "redis://broker:6379/0", False),
        ("redis://h:6379/0", "amqp://u:pw@h:5672//", False),
        ("redis://h:6379/0", "redis+sentinel://h:26379/tf/1", False),  # sentinels name it
        ("redis://h:6379/0", "redis://h:notaport/0", False),
    ],
)
def test_the_broker_shares_the_state_on_the_same_host_and_port_whatever_the_db(
    state: str, broker: str | None, shared: bool
) -> None:
    assert shares_state(settings(state, broker)) is shared


def test_the_warning_names_both_urls_with_their_passwords_masked(
    caplog: pytest.LogCaptureFixture,
) -> None:
    log = logging.getLogger("test.shared_broker")
    warn_if_shared(settings("redis://:s3cret-pw@h:1/0", "redis://:s3cret-pw@h:1/1"), "x", log)
    warn_if_shared(settings("redis://:s3cret-pw@h:1/0", None), "x", log)
    warn_if_shared(settings("redis://h:1/0", "redis://h:2/0"), "x", log)  # apart: nothing
    first, unset = (r.getMessage() for r in caplog.records)
    assert first.startswith(
        "x: the Celery broker (redis://:***@h:1/1) is on the state's Redis server "
        "(redis://:***@h:1/0). They share its memory"
    ), first
    assert unset.startswith("x: THREADFOLD_BROKER_URL is unset: the Celery broker is the state")
    assert all("s3cret" not in m and "'Redis memory'" in m for m in (first, unset))


def _said(process: ManagedProcess) -> list[str]:
    return [line for line in process.read_log().splitlines() if SAID in line]


def test_the_api_a_worker_and_beat_each_say_it_once_at_their_start(tmp_path: Path) -> None:
    password = "pw-shared-broker-0123456789"  # noqa: S105  # a throwaway
    with RedisServer(password=password) as server:
        shared = settings(server.url, server.url.removesuffix("/0") + "/1")
        worker = start_worker(shared, "w1", tmp_path)
        beat = start_beat(shared, tmp_path)
        api, _ = start_api(shared, tmp_path, THREADFOLD_API_WORKERS="2")
        try:
            for process in (worker, beat, api):
                wait_until(partial(_said, process), 60, message=f"{process.argv} said nothing")
            wait_until(
                lambda: api.read_log().count("Application startup complete.") == 2,
                60,
                message="the API's two processes did not start",
            )
            # Once each: the API's two uvicorn processes do not say it again.
            for process, who in ((worker, "worker"), (beat, "beat"), (api, "api")):
                (line,) = _said(process)
                assert "WARNING" in line and f"threadfold {who}: the Celery broker" in line
                assert f"(redis://:***@127.0.0.1:{server.port}/1)" in line
                assert password not in process.read_log()
        finally:
            for process in (worker, beat, api):
                process.terminate()


def test_a_broker_of_its_own_is_not_warned_about(tmp_path: Path) -> None:
    with RedisServer() as state, RedisServer() as broker:
        api, _ = start_api(settings(state.url, broker.url), tmp_path, THREADFOLD_API_WORKERS="2")
        try:
            assert _said(api) == []  # /healthz answered: past the point where it would say
        finally:
            api.terminate()

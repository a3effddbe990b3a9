"""The RabbitMQ fixtures: a vhost of a test's own, gone afterwards, and what a machine
without RabbitMQ does (skip; fail under CI)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from celery import Celery

from tests.infra import free_port
from tests.infra import rabbitmq as rabbit
from tests.infra.missing import missing


def test_an_unreachable_rabbitmq_is_said_skipped_and_a_failure_under_ci(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(rabbit.RabbitMQUnavailable, match=r"^nothing listens on 127\.0\.0\.1:"):
        rabbit.check_reachable(port=free_port())
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="RabbitMQ: down"):
        missing("RabbitMQ: down")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="RabbitMQ: down"):
        missing("RabbitMQ: down")


@pytest.mark.rabbitmq
def test_a_vhost_serves_its_url_and_is_deleted_afterwards(rabbitmq: None) -> None:
    with rabbit.vhost() as url:
        name = url.rsplit("/", 1)[1]
        assert name in rabbit.vhosts()
        app = Celery("probe", broker=url, set_as_current=False)
        with app.connection_for_write() as conn:  # the guest user may declare a queue there
            assert conn.default_channel.queue_declare("probe").message_count == 0
        app.close()
    assert name not in rabbit.vhosts()


@pytest.mark.rabbitmq
def test_the_vhosts_of_a_killed_session_are_deleted_and_live_ones_kept(rabbitmq: None) -> None:
    ended = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    left = f"{rabbit.PREFIX}{ended.stdout.strip()}-0123abcd"  # as a killed session leaves it
    rabbit._ctl("add_vhost", left)
    try:
        with rabbit.vhost() as url:
            rabbit.delete_leftovers()
            names = rabbit.vhosts()
            assert left not in names
            assert url.rsplit("/", 1)[1] in names  # this session's own, its pid alive
    finally:
        if left in rabbit.vhosts():
            rabbit._ctl("delete_vhost", left)

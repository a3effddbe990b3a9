"""Pytest fixtures over real services; `tests/conftest.py` imports them by name.

`redis_url` is the cheap default: one server for the whole session, emptied before each
test. Ask for `redis_server` when a test kills, restarts or reconfigures its server.
`broker_url` runs a test once per Celery broker: the state's Redis, then RabbitMQ.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.infra import rabbitmq as rabbit
from tests.infra.missing import missing
from tests.infra.redis_cluster import RedisCluster
from tests.infra.redis_server import RedisServer


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    """A fresh server of the test's own, closed (and its directory removed) afterwards."""
    with RedisServer() as server:
        yield server


@pytest.fixture(scope="session")
def redis_server_session() -> Iterator[RedisServer]:
    """One server shared by the session; tests reach it through `redis_url`."""
    with RedisServer() as server:
        yield server


@pytest.fixture
def redis_url(redis_server_session: RedisServer) -> str:
    """The shared server's URL, with every database flushed before the test."""
    with redis_server_session.probe() as admin:
        admin.flushall()
    return redis_server_session.url


@pytest.fixture(scope="module")
def redis_cluster() -> Iterator[RedisCluster]:
    """A 3-master cluster shared by the module's tests (not flushed between them)."""
    with RedisCluster() as cluster:
        yield cluster


@pytest.fixture(scope="session")
def rabbitmq() -> None:
    """The machine's RabbitMQ, checked once a session (and rid of the vhosts that killed
    sessions left): a test that needs it is skipped without it, and fails under CI."""
    try:
        rabbit.check_reachable()
        rabbit.delete_leftovers()
    except rabbit.RabbitMQUnavailable as exc:
        missing(f"RabbitMQ: {exc}")


@pytest.fixture
def rabbitmq_url(rabbitmq: None) -> Iterator[str]:
    """An ``amqp://`` URL of a vhost of the test's own, deleted after it."""
    with rabbit.vhost() as url:
        yield url


@pytest.fixture(
    params=[pytest.param("redis"), pytest.param("rabbitmq", marks=pytest.mark.rabbitmq)]
)
def broker_url(request: pytest.FixtureRequest) -> str | None:
    """The test runs once per broker: None (Celery's broker is the state's Redis, the
    default), then a RabbitMQ vhost of its own. Give it to ``make_settings``."""
    if request.param == "redis":
        return None
    url: str = request.getfixturevalue("rabbitmq_url")
    return url

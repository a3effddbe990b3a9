"""Fixtures over real services (a private redis-server per test or session, a cluster)."""

from collections.abc import Iterator

import pytest

from tests.infra.fixtures import (
    broker_url,
    rabbitmq,
    rabbitmq_url,
    redis_cluster,
    redis_server,
    redis_server_session,
    redis_url,
)
from tests.workers.harness import close_clients


@pytest.fixture(autouse=True)
def _close_store_clients() -> Iterator[None]:
    """Every Redis client a test made through ``store_for`` is closed when it ends."""
    yield
    close_clients()


__all__ = [
    "broker_url",
    "rabbitmq",
    "rabbitmq_url",
    "redis_cluster",
    "redis_server",
    "redis_server_session",
    "redis_url",
]

"""The integrations run against the client tests' stack: a redis-server, a Celery worker
process and an API process (tests/client/conftest.py), one per xdist worker."""

from tests.client.conftest import runner, stack

__all__ = ["runner", "stack"]

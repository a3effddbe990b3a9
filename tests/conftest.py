"""Fixtures over real services (a private redis-server per test or session, a cluster)."""

from tests.infra.fixtures import redis_cluster, redis_server, redis_server_session, redis_url

__all__ = ["redis_cluster", "redis_server", "redis_server_session", "redis_url"]

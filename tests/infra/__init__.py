"""Real services for tests and benchmarks, run as child processes on free loopback ports.

Nothing here fakes a service: `RedisServer` runs `redis-server`, `RedisCluster` runs N of
them joined by `redis-cli --cluster create`, and `ManagedProcess` runs anything else (a
Celery worker, an HTTP app). Every child is killed when its owner is closed, collected, or
when the interpreter exits. Tests wait on conditions with `wait_until`, never with sleeps.
"""

from tests.infra.errors import ExecutableNotFoundError, InfraError, ServiceStartError
from tests.infra.ports import free_port
from tests.infra.processes import ManagedProcess, find_executable, pid_alive, wait_until
from tests.infra.redis_cluster import RedisCluster
from tests.infra.redis_server import RedisServer

__all__ = [
    "ExecutableNotFoundError",
    "InfraError",
    "ManagedProcess",
    "RedisCluster",
    "RedisServer",
    "ServiceStartError",
    "find_executable",
    "free_port",
    "pid_alive",
    "wait_until",
]

"""Process supervision, the one way this project runs its services as child processes.

``threadfold up`` (:mod:`threadfold.workers.ops.stack`), the tests (tests/infra,
tests/workers/harness.py) and the benchmarks start redis-server, Celery workers and
beat, and the API through this package:

- :mod:`.child`: `ManagedProcess` (its own process group, killed with its owner, even
  when the owner is SIGKILLed), `wait_until`, free loopback ports;
- :mod:`.group`: `ProcessGroup`, members with log files, restarted when they exit
  (a crash loop stops it), stopped in reverse order with SIGTERM then SIGKILL;
- :mod:`.redis_server`: redis-server's command line with the persistence asked for,
  its password file, its readiness, and `RedisServer`;
- :mod:`.launch`: Celery and API command lines, their environment, readiness checks.
"""

from threadfold.workers.ops.processes.child import (
    CLUSTER_BUS_OFFSET,
    HOST,
    ManagedProcess,
    find_executable,
    free_port,
    pid_alive,
    wait_until,
)
from threadfold.workers.ops.processes.errors import (
    CrashLoop,
    ExecutableNotFoundError,
    ProcessError,
    ServiceStartError,
)
from threadfold.workers.ops.processes.group import MAX_RESTARTS, Member, ProcessGroup
from threadfold.workers.ops.processes.launch import (
    API_ARGV,
    api_env,
    api_url,
    celery_answers,
    celery_argv,
    http_ok,
    named_worker_argv,
    settings_env,
    start_service,
)
from threadfold.workers.ops.processes.redis_server import (
    DURABLE,
    INSTALL_HINT,
    AppendFsync,
    RedisServer,
    persistence,
    redis_answers,
    redis_argv,
    write_password_file,
)

__all__ = [
    "API_ARGV",
    "CLUSTER_BUS_OFFSET",
    "DURABLE",
    "HOST",
    "INSTALL_HINT",
    "MAX_RESTARTS",
    "AppendFsync",
    "CrashLoop",
    "ExecutableNotFoundError",
    "ManagedProcess",
    "Member",
    "ProcessError",
    "ProcessGroup",
    "RedisServer",
    "ServiceStartError",
    "api_env",
    "api_url",
    "celery_answers",
    "celery_argv",
    "find_executable",
    "free_port",
    "http_ok",
    "named_worker_argv",
    "persistence",
    "pid_alive",
    "redis_answers",
    "redis_argv",
    "settings_env",
    "start_service",
    "wait_until",
    "write_password_file",
]

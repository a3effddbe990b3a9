"""The supervision module's errors: one root, each subclass says when it is raised.

Timeouts while waiting on a condition are the builtin ``TimeoutError`` (see
``wait_until``), so a caller can tell "the service never came up" from "my condition
never held".
"""

from __future__ import annotations

from threadfold.core.errors import ThreadfoldError


class ProcessError(ThreadfoldError):
    """Root of every error raised by :mod:`threadfold.workers.ops.processes`."""


class ExecutableNotFoundError(ProcessError):
    """Raised when a service binary (e.g. ``redis-server``) is not on PATH."""


class ServiceStartError(ProcessError):
    """Raised when a service exits or refuses to become ready while starting.

    The message carries the tail of the service's log, which is usually the real reason.
    """


class CrashLoop(ProcessError):
    """Raised when a supervised process keeps exiting, or does not come back ready."""

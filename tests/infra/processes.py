"""Child processes for tests: the supervision module's (threadfold.workers.ops.processes),
named here so the tests keep one import path for their infrastructure."""

from __future__ import annotations

from threadfold.workers.ops.processes.child import (
    ManagedProcess,
    find_executable,
    pid_alive,
    wait_until,
)

__all__ = ["ManagedProcess", "find_executable", "pid_alive", "wait_until"]

"""The test infrastructure's errors: the supervision module's (one root, `InfraError`).

Timeouts while waiting on a condition are the builtin `TimeoutError` (see `wait_until`),
so a test can tell "the service never came up" from "my condition never held".
"""

from __future__ import annotations

from threadfold.workers.ops.processes.errors import (
    ExecutableNotFoundError,
    ServiceStartError,
)
from threadfold.workers.ops.processes.errors import ProcessError as InfraError

__all__ = ["ExecutableNotFoundError", "InfraError", "ServiceStartError"]

"""Free loopback ports: the supervision module's (threadfold.workers.ops.processes)."""

from __future__ import annotations

from threadfold.workers.ops.processes.child import CLUSTER_BUS_OFFSET, HOST, free_port

__all__ = ["CLUSTER_BUS_OFFSET", "HOST", "free_port"]

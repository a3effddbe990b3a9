"""Waiting on the pipeline: until the workers have drained what was sent."""

from __future__ import annotations

from collections.abc import Iterable

from threadfold.workers.ops.processes import wait_until
from threadfold.workers.storage.store import Store


def wait_drained(store: Store, refs: Iterable[str], timeout: float) -> None:
    """Until every thread has no backlog (checked through the status the API serves)."""
    pending = set(refs)

    def done() -> bool:
        for ref in list(pending):
            status = store.status(ref)
            if status is not None and status.backlog == 0:
                pending.discard(ref)
        return not pending

    wait_until(done, timeout, interval=0.1,
               message=f"threads still with a backlog: {sorted(pending)[:5]}")

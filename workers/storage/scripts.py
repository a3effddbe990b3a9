"""Every script of the data model, for what loads them all (a benchmark's script cache
warm-up, the tests' syntax check)."""

from __future__ import annotations

from typing import Final

from threadfold.workers.redisio.client import Script
from threadfold.workers.storage import (
    backlog,
    candidates,
    checkpoint_put,
    checkpoint_read,
    checkpoint_remove,
    checkpoint_runs,
    checkpoint_writes,
    commit,
    context,
    copy_source,
    count,
    cursors,
    delete,
    expire,
    fail,
    feed,
    follow,
    head,
    ingest,
    log_fence,
    lookup,
    patch,
    prefix,
    prune,
    read_state,
    rebuild,
    retry,
    search,
    status,
    threads_recent,
    touch,
    wake,
)

#: Each script's module: its SCRIPT, KEYS (``Keys``) and fixed ARGV (``Args``, if any).
MODULES: Final = (
    ingest,
    head,
    candidates,
    commit,
    fail,
    retry,
    wake,
    read_state,
    copy_source,
    context,
    lookup,
    delete,
    status,
    backlog,
    rebuild,
    prefix,
    log_fence,
    cursors,
    feed,
    follow,
    threads_recent,
    patch,
    touch,
    expire,
    search,
    count,
    prune,
    checkpoint_put,
    checkpoint_writes,
    checkpoint_read,
    checkpoint_remove,
    checkpoint_runs,
)

ALL: Final[tuple[Script, ...]] = tuple(m.SCRIPT for m in MODULES)

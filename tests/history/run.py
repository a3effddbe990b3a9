"""A whole run: drive, let everything quiesce, read every thread's end, check."""

from __future__ import annotations

import random
import time
from typing import Any, Final

from tests.history import operator, reads
from tests.history.checker import Verdict, check
from tests.history.driver import Plan, drive
from tests.history.model import History
from tests.history.session import Session, Target

#: What a history runs with, over the tests' short leases
#: (``tests.workers.harness.FAST``): applied entries kept half a second (a thread's
#: log is whole about that long after its first write, then trimmed: time travel
#: before the live version is 410); a commit of up to 2,000 entries, above a page of
#: 1,000, so that one commit after a skip can trim past what a read of the pages after
#: the live state has yet to take; a poison entry quarantines its thread at once.
SETTINGS: Final[dict[str, Any]] = {
    "retention_seconds": 0.5,
    "batch_size": 2000,
    "failure_limit": 1,
}
#: Thread ids: few, so that operations on one thread keep meeting.
THREADS: Final = 6
QUIESCE_SECONDS: Final = 60.0


def refs(count: int = THREADS) -> list[str]:
    return [f"_/h{n}" for n in range(count)]


def quiesce(session: Session, timeout: float = QUIESCE_SECONDS) -> list[str]:
    """Until no thread is quarantined or has a backlog: each quarantined thread's
    failed entry is skipped (recorded, like any retry), and a thread whose backlog has
    no wake-up coming (a poison entry appended after its last write) is woken. The
    threads still busy at ``timeout`` (a backlog that never drains is a finding too)."""
    deadline = time.monotonic() + timeout
    while True:
        busy = []
        for ref in session.refs:
            status = session.store.status(ref)
            if status is not None and status.quarantined:
                operator.retry(session, ref, skip=True, via="store")
            if status is not None and (status.quarantined or status.backlog):
                busy.append(ref)
        if not busy or time.monotonic() > deadline:
            return busy
        stalled = session.store.wake_if_stalled(busy, session.settings.wake_ttl_ms)
        if stalled:
            session.waker.wake(stalled)
        time.sleep(0.1)  # polling the condition above, which nothing signals


def finish(session: Session) -> None:
    """Each thread's end: its live state (which must be the fold of every entry its
    incarnation was given), time travel to its newest version, and an audit."""
    rng = random.Random(0)
    for ref in session.refs:
        reads.live(session, rng, ref, kind="final")
        newest = session.known.snapshot(ref)[0]
        if newest:
            reads.travel(session, rng, ref, asked=newest[-1])
    operator.recompute(session, session.refs, "audit")


def run(target: Target, plan: Plan) -> tuple[History, Verdict]:
    """Drive, quiesce, read the ends, and judge every answer."""
    session = Session(target, refs())
    try:
        drive(session, plan)
        busy = quiesce(session)
        finish(session)
    finally:
        session.close()
    verdict = check(session.history, target.settings.retention_ms)
    if busy:
        verdict.wrong.append(f"threads never drained ({QUIESCE_SECONDS:g} s): {busy}")
    return session.history, verdict

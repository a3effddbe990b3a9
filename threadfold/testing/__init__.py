"""Check a deployment against the one-delta-at-a-time oracle (docs/testing.md).

A :class:`Ledger` records what the deployment acknowledged: per thread, each delta's
messages with the ``version`` and the ``ids`` its append was answered with. What a
thread must then hold is the exact reference fold (:func:`fold`): the project's reducer
(:func:`threadfold.core.apply_deltas`, proven equal to LangGraph's delta reducer)
called once per delta, in version order, each delta with the ids it was stored under.
However a deployment batched the deltas, its state must equal that fold.

Against a live deployment, through any of the four clients (the public contract only:
``append``, ``state``, ``wait_for``)::

    ledger = Ledger()
    with HttpClient(url) as client:
        ledger.append(client, "t-1", [{"role": "user", "content": "hi"}])
        report = check(client, ledger)   # waits for each thread's last version
        report.assert_ok()

The asyncio clients have :meth:`Ledger.append_async`, :func:`check_async`,
:func:`wait_applied_async` and :func:`state_of_async`. Writes made concurrently, or
whose answers may be lost, go through :meth:`Ledger.begin` and then
:meth:`Ledger.accept` / :meth:`Ledger.abandon`: a write with no answer leaves its thread
unverifiable (reported, never guessed) unless :func:`settle` re-sends it by its
``delta_id``.

This module imports only the reducers (:mod:`threadfold.core`): no Redis, Celery or
httpx, so a load-test harness may import it beside any client.
"""

from __future__ import annotations

from threadfold.testing.check import (
    TIMEOUT,
    Mismatch,
    Report,
    check,
    check_async,
    describe,
    settle,
    state_of,
    state_of_async,
    wait_applied,
    wait_applied_async,
)
from threadfold.testing.fold import as_json, fold, stamped, version_key
from threadfold.testing.ledger import Acknowledged, Ledger, Outgoing

__all__ = [
    "TIMEOUT",
    "Acknowledged",
    "Ledger",
    "Mismatch",
    "Outgoing",
    "Report",
    "as_json",
    "check",
    "check_async",
    "describe",
    "fold",
    "settle",
    "stamped",
    "state_of",
    "state_of_async",
    "version_key",
    "wait_applied",
    "wait_applied_async",
]

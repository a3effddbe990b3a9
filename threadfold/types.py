"""What the clients return, and the one interface every kind of client has.

The results are the thread service's (:mod:`threadfold.core.results`), which the API
encodes as its response bodies, field for field: an HTTP client decodes them straight
back into these types, a direct client returns them as the service built them.

``ClientProtocol`` and ``AsyncClientProtocol`` are the client front's methods as
Protocols, for code that takes any kind of client (or a wrapper of one): they are
derived from the front (``threadfold/_async/front.py``) by ``python -m tests.unasync``,
never written by hand.
"""

from __future__ import annotations

from threadfold._async.protocol import AsyncClientProtocol
from threadfold._sync.protocol import ClientProtocol
from threadfold.args import DeltaLike, HasDelta
from threadfold.core.context import Counter, Strategy
from threadfold.core.results import (
    Appended,
    Context,
    Copied,
    Format,
    Pruned,
    Searched,
    Skipped,
    State,
    Status,
    ThreadCount,
    ThreadList,
    ThreadRow,
    Unservable,
)
from threadfold.workers.threads.operations import UNSET, Delta, Unset

__all__ = [
    "UNSET",
    "Appended",
    "AsyncClientProtocol",
    "ClientProtocol",
    "Context",
    "Copied",
    "Counter",
    "Delta",
    "DeltaLike",
    "Format",
    "HasDelta",
    "Pruned",
    "Searched",
    "Skipped",
    "State",
    "Status",
    "Strategy",
    "ThreadCount",
    "ThreadList",
    "ThreadRow",
    "Unservable",
    "Unset",
]

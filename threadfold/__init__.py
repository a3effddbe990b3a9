"""threadfold's clients: append message deltas to conversation threads and read them back.

``Client`` / ``AsyncClient`` talk to Redis and the broker directly; ``HttpClient`` /
``AsyncHttpClient`` to a deployment's HTTP API. All four have the same methods and
raise the same exceptions (docs/clients.md).

The names are loaded on first use (PEP 562): importing a part of the package, or one
kind of client, does not pull in what the others need (Redis, Celery, httpx).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from threadfold.aclient import AsyncClient
    from threadfold.client import Client
    from threadfold.errors import (
        ClientClosed,
        Conflict,
        Gone,
        InvalidInput,
        NotFound,
        PoisonEntry,
        RateLimited,
        RequestError,
        ServerError,
        ThreadfoldError,
        Unauthorized,
        Unavailable,
        VersionNotReached,
    )
    from threadfold.feed import Change, Deleted, Event, Removed, Snapshot, Transcript, Upsert
    from threadfold.http import AsyncHttpClient, HttpClient
    from threadfold.types import (
        UNSET,
        Appended,
        AsyncClientProtocol,
        ClientProtocol,
        Context,
        Copied,
        Delta,
        DeltaLike,
        Format,
        Pruned,
        Searched,
        Skipped,
        State,
        Status,
        ThreadList,
        ThreadRow,
        Unservable,
    )

_WHERE = {
    "Client": "threadfold.client",
    "AsyncClient": "threadfold.aclient",
    "HttpClient": "threadfold.http",
    "AsyncHttpClient": "threadfold.http",
    **dict.fromkeys(
        [
            "UNSET",
            "Appended",
            "AsyncClientProtocol",
            "ClientProtocol",
            "Context",
            "Copied",
            "Delta",
            "DeltaLike",
            "Format",
            "Pruned",
            "Searched",
            "Skipped",
            "State",
            "Status",
            "ThreadList",
            "ThreadRow",
            "Unservable",
        ],
        "threadfold.types",
    ),
    **dict.fromkeys(
        ["Change", "Deleted", "Event", "Removed", "Snapshot", "Transcript", "Upsert"],
        "threadfold.feed",
    ),
    **dict.fromkeys(
        [
            "ClientClosed",
            "Conflict",
            "Gone",
            "InvalidInput",
            "NotFound",
            "PoisonEntry",
            "RateLimited",
            "RequestError",
            "ServerError",
            "ThreadfoldError",
            "Unauthorized",
            "Unavailable",
            "VersionNotReached",
        ],
        "threadfold.errors",
    ),
}

__all__ = [
    "UNSET",
    "Appended",
    "AsyncClient",
    "AsyncClientProtocol",
    "AsyncHttpClient",
    "Change",
    "Client",
    "ClientClosed",
    "ClientProtocol",
    "Conflict",
    "Context",
    "Copied",
    "Deleted",
    "Delta",
    "DeltaLike",
    "Event",
    "Format",
    "Gone",
    "HttpClient",
    "InvalidInput",
    "NotFound",
    "PoisonEntry",
    "Pruned",
    "RateLimited",
    "Removed",
    "RequestError",
    "Searched",
    "ServerError",
    "Skipped",
    "Snapshot",
    "State",
    "Status",
    "ThreadList",
    "ThreadRow",
    "ThreadfoldError",
    "Transcript",
    "Unauthorized",
    "Unavailable",
    "Unservable",
    "Upsert",
    "VersionNotReached",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'threadfold' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])

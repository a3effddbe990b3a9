"""``threadfold.AsyncClient``: the asyncio direct client (Redis and the broker, no HTTP):
the client front (:mod:`threadfold._async.front`) over the thread service in process."""

from threadfold._async.direct import AsyncClient

__all__ = ["AsyncClient"]

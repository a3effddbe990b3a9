"""``threadfold.Client``: the synchronous direct client (Redis and the broker, no HTTP).

For backends that run beside the pipeline. It is the client front
(:mod:`threadfold._sync.front`) over the thread service in process; its source is the
asyncio client's (``threadfold/_async/direct.py``), from which it is generated.
"""

from threadfold._sync.direct import Client

__all__ = ["Client"]

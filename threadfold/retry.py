"""When the HTTP clients send a call again, and after how long.

Sent again: a call that got no answer (the connection failed, was dropped, or timed
out) and one answered 502, 503 or 504 (a gateway without a live API process, or an
API without its Redis). Never one answered 4xx: it would be refused again. Every call
is safe to repeat: reads are reads, every append carries a ``delta_id`` (applied once),
and a DELETE whose first answer was lost is done when its retry finds no thread.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Final

import httpcore
import httpx

from threadfold.errors import RequestError, Unavailable

RETRIED_STATUSES = frozenset({502, 503, 504})


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """``retries`` further attempts after the first, ``backoff`` seconds before the first
    of them, doubling up to ``max_backoff`` (a ``Retry-After`` of the service, when
    longer, is waited instead, up to ``max_backoff`` too)."""

    retries: int = 3
    backoff: float = 0.1
    max_backoff: float = 2.0

    def __post_init__(self) -> None:
        if isinstance(self.retries, bool) or not isinstance(self.retries, int) or self.retries < 0:
            raise ValueError(f"retries: expected an integer >= 0, got {self.retries!r}")
        for name in ("backoff", "max_backoff"):
            value = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not (0 <= value < math.inf)
            ):
                raise ValueError(f"{name}: expected a finite number of seconds >= 0, got {value!r}")

    def delay(self, attempt: int, failure: RequestError) -> float:
        """Seconds to wait before attempt ``attempt + 1`` (0 is the first retry): half the
        step plus a random half, so that many clients failing together do not all come
        back at once."""
        step = min(self.backoff * 2.0**attempt, self.max_backoff)
        step = max(step, min(failure.retry_after or 0.0, self.max_backoff))
        return step / 2 + random.uniform(0, step / 2)  # noqa: S311  # jitter, not a secret


def retried(failure: RequestError) -> bool:
    return failure.status is None or failure.status in RETRIED_STATUSES


#: What a failed exchange raises, from either transport: httpx's (the event streams)
#: and httpcore's (every other call).
TRANSPORT_ERRORS: Final = (
    httpx.TransportError, httpcore.NetworkError, httpcore.TimeoutException,
    httpcore.ProtocolError, httpcore.UnsupportedProtocol,
)


def unreachable(exc: Exception, url: str) -> Unavailable | None:
    """The Unavailable a failed exchange is, or None when sending it again cannot help
    (a URL whose scheme is not HTTP's)."""
    if isinstance(exc, httpx.UnsupportedProtocol | httpcore.UnsupportedProtocol):
        return None
    kind = type(exc).__name__
    return Unavailable(
        f"no answer from {url}: {kind}: {exc}", status=None, code="unreachable", retry_after=None
    )

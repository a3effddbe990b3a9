"""A tenant's share of a process's appends: a token bucket per tenant.

Every delta is work for the same Redis primaries and the same workers, so a tenant
that floods them delays everybody else's deltas: measured, a quiet tenant's p99
enqueue-to-visible rose sixfold beside a tenant sending bulk streams as fast as it
could (docs/scaling.md). ``THREADFOLD_TENANT_RATE`` caps what one tenant appends
through one process (an API process, a direct client) at that many deltas a second on
average, ``THREADFOLD_TENANT_BURST`` ahead of it; the rest of the capacity stays for
the other tenants. A call over the tenant's share is refused whole, before anything is
written, with :class:`~threadfold.core.errors.RateLimited` (429 ``rate_limited``,
``Retry-After``: when the share allows it again). What is counted are writes: an
append's deltas, a bulk's, and a copy as one delta (it writes the source's state as
its new thread's first delta). Admission is the last step before the write, after
every check that can refuse the call as invalid (the producer's validation of the
messages among them), so a refused call (422, 404, ...) costs the tenant nothing.

The bucket may go into debt: a call is admitted whenever the bucket holds a delta's
worth and takes all its deltas, so a bulk larger than the burst still passes once, and the
tenant then waits it off. Per process, not per fleet: N API processes admit up to N
times the rate (a fleet-wide count would cost a Redis write on every call).
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable

from threadfold.core.errors import RateLimited

#: Tenants remembered at most; past it, those whose bucket is full are forgotten (a
#: full bucket is what a new tenant starts with, so nothing is lost), then, if still
#: crowded, the least recently seen half (their debts forgiven).
MAX_TENANTS = 10_000
#: Floating-point slack: a caller that waited exactly the wait named is admitted.
_ROUNDING = 1e-9


class TenantBudget:
    """Token buckets: ``rate`` deltas a second per tenant, ``burst`` at most saved up."""

    def __init__(
        self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.rate = rate
        self.burst = float(burst)
        self.clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}  # tenant -> (tokens, at)
        self._lock = threading.Lock()  # a sync client's threads share its service

    def admission(self, tenant: str, deltas: int) -> Callable[[], None]:
        """:meth:`admit` of ``tenant``'s ``deltas``, to be made later: once the write
        is validated, before anything is written (a refused write costs nothing)."""
        return functools.partial(self.admit, tenant, deltas)

    def admit(self, tenant: str, deltas: int) -> None:
        """Take ``deltas`` from ``tenant``'s bucket, or raise RateLimited."""
        with self._lock:
            now = self.clock()
            tokens, at = self._buckets.get(tenant, (self.burst, now))
            tokens = min(self.burst, tokens + (now - at) * self.rate)
            if tokens < 1 - _ROUNDING:  # not one whole delta's worth
                self._buckets[tenant] = (tokens, now)
                wait = (1 - tokens) / self.rate
                raise RateLimited(
                    f"tenant {tenant!r} is over its {self.rate:g} deltas a second; "
                    f"retry in {wait:.2f} s",
                    retry_after=wait,
                )
            self._buckets[tenant] = (tokens - deltas, now)
            if len(self._buckets) > MAX_TENANTS:
                self._forget_full(now)

    def _forget_full(self, now: float) -> None:
        for tenant, (tokens, at) in list(self._buckets.items()):
            if tokens + (now - at) * self.rate >= self.burst:
                del self._buckets[tenant]
        if len(self._buckets) > MAX_TENANTS // 2:
            # Still crowded (every bucket in use): forget the half least recently seen,
            # so the next calls do not scan again; they start full, as new tenants do.
            by_age = sorted(self._buckets.items(), key=lambda item: item[1][1])
            for tenant, _ in by_age[: len(by_age) // 2]:
                del self._buckets[tenant]

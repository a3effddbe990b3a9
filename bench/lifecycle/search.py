"""What a search page and a count cost, by shape, through a direct client
(``threadfold.Client``: the service's own search, as the API runs it).

A search asks each of the 1,024 buckets for its part (one ``search.lua`` call each,
pipelined in one round trip) and merges them; a round that cannot settle a page (a
bounded walk stopped short) asks them all again, up to ``ROUNDS`` times; then one
``status.lua`` call per thread of the page. A count is one ``count.lua`` call per
bucket. So the script calls per request are buckets x rounds (+ the page's rows), read
here off Redis's own count of EVALSHA calls, and the rounds from them.

Per shape, the same request (a different user each time, where the shape has one) is
made until ``least`` of them and ``budget_s`` seconds are reached (or ``most``); Redis's
CPU (``INFO cpu``) and its time inside the scripts (``INFO commandstats``) are read
before and after the shape's requests, the client's CPU and wall time around each.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, Final

import redis

from bench.common import cpu
from bench.lifecycle.threads import RARE_KEY, RARE_VALUE, USER, Shape
from threadfold import Client
from threadfold.types import Searched

#: A page's size, the service's default.
LIMIT: Final = 20


@dataclass(frozen=True)
class Ask:
    """One kind of request: ``prepare(i)`` (untimed: a page before the one timed) makes
    the thunk timed; ``check(i, answer)`` says what is wrong with its answer ('' if
    nothing)."""

    name: str
    op: str
    prepare: Callable[[int], Callable[[], Any]]
    check: Callable[[int, Any], str]


@dataclass(frozen=True)
class Cost:
    """A shape's requests: how many, and their cost each."""

    name: str
    op: str
    threads: int
    requests: int
    wall_ms_median: float
    wall_ms_min: float
    client_cpu_ms: float
    redis_cpu_ms: float
    redis_script_ms: float
    script_calls: float
    rows: float
    rounds: float
    #: The share of answers with a cursor (a next page, or a walk cut short).
    cursors: float
    wrong: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _evalsha(client: redis.Redis) -> tuple[int, int]:
    stats: dict[str, Any] = client.info("commandstats")
    row = stats.get("cmdstat_evalsha", {"calls": 0, "usec": 0})
    return int(row["calls"]), int(row["usec"])


def _page_problem(page: Searched, want: int, user: str | None, cursor: bool | None,
                  created: bool = False) -> str:
    rows = page.threads
    if len(rows) != want:
        return f"{len(rows)} rows, expected {want}"
    if user is not None and any(r.metadata.get(USER) != user for r in rows):
        return "a row of another user"
    times = [r.created_ms or 0 if created else r.last_activity_ms for r in rows]
    if times != sorted(times, reverse=True):
        return "rows not latest first"
    if cursor is not None and (page.cursor is not None) != cursor:
        return f"cursor {'missing' if cursor else 'given'}"
    return ""


def asks(client: Client, shape: Shape) -> list[Ask]:
    """The requests measured at ``shape`` (which has metadata)."""
    n, users = shape.threads, shape.users

    def user(i: int) -> str:
        return f"u{(i * 37) % users}"

    def by_user(sort: str) -> Callable[[int], Callable[[], Any]]:
        return lambda i: lambda: client.search(metadata={USER: user(i)}, sort=sort,
                                               limit=LIMIT)

    def second_page(i: int) -> Callable[[], Any]:
        first = client.search(metadata={USER: user(i)}, limit=LIMIT)
        return lambda: client.search(metadata={USER: user(i)}, limit=LIMIT, cursor=first.cursor)

    def per_user(i: int) -> int:
        return shape.user_threads((i * 37) % users)

    def page_of(i: int, page: Searched, skip: int = 0) -> str:
        want = max(0, min(LIMIT, per_user(i) - skip))
        return _page_problem(page, want, user(i), per_user(i) > skip + LIMIT)

    def counted(want: Callable[[int], int]) -> Callable[[int, Any], str]:
        return lambda i, got: "" if got == want(i) else f"counted {got}, expected {want(i)}"

    return [
        Ask(f"metadata user (~{n // users:,} threads each)", "search", by_user("activity"),
            page_of),
        Ask("metadata user, sort=created", "search", by_user("created"),
            lambda i, page: _page_problem(page, min(LIMIT, per_user(i)), user(i),
                                          per_user(i) > LIMIT, created=True)),
        # (Where a user's threads fit in one page there is no cursor, and the "second"
        # page is the first again.)
        Ask("metadata user, second page (cursor)", "search", second_page,
            lambda i, page: page_of(i, page, LIMIT if per_user(i) > LIMIT else 0)),
        Ask(f"rare key ({shape.rare} threads)", "search",
            lambda i: lambda: client.search(metadata={RARE_KEY: RARE_VALUE}, limit=LIMIT),
            lambda i, page: _page_problem(page, shape.rare, None, False)),
        Ask("no filter, sort=activity", "search",
            lambda i: lambda: client.search(limit=LIMIT),
            lambda i, page: _page_problem(page, min(LIMIT, n), None, n > LIMIT)),
        Ask("status=quarantined (none: the bounded walk)", "search",
            lambda i: lambda: client.search(status="quarantined", limit=LIMIT),
            lambda i, page: "" if not page.threads else f"{len(page.threads)} rows"),
        Ask(f"metadata user (~{n // users:,} threads each)", "count",
            lambda i: lambda: client.count(metadata={USER: user(i)}), counted(per_user)),
        Ask(f"rare key ({shape.rare} threads)", "count",
            lambda i: lambda: client.count(metadata={RARE_KEY: RARE_VALUE}),
            counted(lambda i: shape.rare)),
        Ask("no filter", "count", lambda i: client.count, counted(lambda i: n)),
        Ask("status=quarantined (none)", "count",
            lambda i: lambda: client.count(status="quarantined"), counted(lambda i: 0)),
    ]


@dataclass(frozen=True)
class Budget:
    """At least ``least`` requests of a kind, then more while they have taken less than
    ``budget_s`` seconds in all, up to ``most``."""

    least: int
    most: int
    budget_s: float


def measure(ask: Ask, admin: redis.Redis, threads: int, buckets: int, budget: Budget) -> Cost:
    """``ask``'s requests, each read alone: Redis's CPU and script calls are read just
    before and after the timed request, so an untimed first page is left out (the two
    INFO reads themselves cost Redis some microseconds, against milliseconds)."""
    walls: list[float] = []
    client_cpu = redis_cpu = 0.0
    rows = calls = usec = cursors = 0
    wrong = ""
    while len(walls) < budget.most and (len(walls) < budget.least or
                                        sum(walls) < budget.budget_s):
        thunk = ask.prepare(len(walls))
        calls_before, usec_before = _evalsha(admin)
        redis_before = cpu.redis_cpu(admin)
        began, began_cpu = time.perf_counter(), time.process_time()
        answer = thunk()
        client_cpu += time.process_time() - began_cpu
        walls.append(time.perf_counter() - began)
        redis_cpu += cpu.redis_cpu(admin) - redis_before
        calls_after, usec_after = _evalsha(admin)
        calls += calls_after - calls_before
        usec += usec_after - usec_before
        wrong = wrong or ask.check(len(walls) - 1, answer)
        if isinstance(answer, Searched):
            rows += len(answer.threads)
            cursors += answer.cursor is not None
    n = len(walls)
    # Each thread of a page is one status call after the rounds of bucket calls.
    scripts = calls / n
    return Cost(
        ask.name, ask.op, threads, n,
        statistics.median(walls) * 1e3, min(walls) * 1e3,
        client_cpu / n * 1e3, redis_cpu / n * 1e3, usec / n / 1e3,
        scripts, rows / n, (scripts - rows / n) / buckets, cursors / n, wrong)


def measure_all(client: Client, admin: redis.Redis, shape: Shape, *, buckets: int,
                budget: Budget, progress: Callable[[str], None]) -> list[Cost]:
    out = []
    for ask in asks(client, shape):
        out.append(measure(ask, admin, shape.threads, buckets, budget))
        c = out[-1]
        progress(f"{shape.threads:,}: {ask.op} {ask.name}: {c.redis_cpu_ms:.1f} ms Redis CPU, "
                 f"{c.script_calls:.0f} script calls, {c.rounds:.2f} rounds, "
                 f"median {c.wall_ms_median:.1f} ms{' WRONG: ' + c.wrong if c.wrong else ''}")
    return out

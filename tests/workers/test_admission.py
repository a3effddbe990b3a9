"""A tenant's share of appends (THREADFOLD_TENANT_RATE): the token bucket's law, and
the refusal through a real API process, where another tenant goes on unaffected."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.workers.harness import make_settings, start_api
from threadfold.core.errors import RateLimited
from threadfold.workers.threads.admission import MAX_TENANTS, TenantBudget


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@settings(max_examples=200, deadline=None)
@given(
    rate=st.floats(1, 1000),
    burst=st.integers(1, 500),
    calls=st.lists(st.tuples(st.floats(0, 2), st.integers(1, 300)), min_size=1, max_size=60),
)
def test_a_tenant_never_gets_more_than_its_burst_and_rate_plus_one_call(
    rate: float, burst: int, calls: list[tuple[float, int]]
) -> None:
    clock = Clock()
    budget = TenantBudget(rate, burst, clock)
    admitted, largest = 0, 0
    for gap, size in calls:
        clock.now += gap
        try:
            budget.admit("loud", size)
        except RateLimited as exc:
            assert exc.status == 429 and exc.code == "rate_limited"
            assert exc.retry_after is not None and exc.retry_after > 0
            clock.now += exc.retry_after
            budget.admit("loud", size)  # the wait it names is enough
        admitted += size
        largest = max(largest, size)
        budget.admit("quiet", 1)  # another tenant: a bucket of its own, never refused
        clock.now += 1 / rate  # (its one delta a step refilled before its next)
    # Debt lets a call larger than what is left pass once: one call beyond the share.
    assert admitted <= burst + rate * clock.now + largest


def test_over_its_share_a_tenant_is_refused_429_while_another_goes_on(
    redis_url: str, tmp_path: Path
) -> None:
    keys = {"key-loud-1234567890": "loud", "key-quiet-1234567890": "quiet"}
    settings_ = make_settings(redis_url, tenant_rate=2.0, tenant_burst=5)
    api, url = start_api(settings_, tmp_path, THREADFOLD_API_KEYS=json.dumps(keys))
    try:
        with httpx.Client(base_url=url, timeout=10) as http:
            def post(key: str, thread: str) -> httpx.Response:
                body = {"messages": [{"role": "user", "content": "hi"}]}
                return http.post(f"/threads/{thread}/deltas", json=body,
                                 headers={"authorization": f"Bearer {key}"})

            answers = [post("key-loud-1234567890", f"l{i}") for i in range(12)]
            codes = [a.status_code for a in answers]
            assert codes[:5] == [202] * 5 and 429 in codes[5:], codes
            refused = next(a for a in answers if a.status_code == 429)
            assert refused.json()["error"]["code"] == "rate_limited"
            assert int(refused.headers["retry-after"]) >= 1
            assert "'loud'" in refused.json()["error"]["message"]
            assert post("key-quiet-1234567890", "q").status_code == 202
            # nothing of a refused call was written
            thread = answers[codes.index(429)].request.url.path.split("/")[2]
            got = http.get(f"/threads/{thread}/state",
                           headers={"authorization": "Bearer key-loud-1234567890"})
            assert got.status_code == 404
    finally:
        api.kill()


def test_a_crowd_of_tenants_is_forgotten_in_halves_not_scanned_on_every_call() -> None:
    clock = Clock()
    budget = TenantBudget(1.0, 5, clock)
    for i in range(MAX_TENANTS + 1):  # every bucket in use: none full to forget
        budget.admit(f"t{i}", 3)
    assert len(budget._buckets) <= MAX_TENANTS // 2 + 1
    budget.admit("t0", 1)  # forgotten: it starts full again

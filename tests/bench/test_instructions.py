"""The instruction counter of the benchmarks (bench/common/instructions.py) on a real
redis-server under callgrind: a block's count is the block's work alone, and twice the
work counts about twice the instructions (what makes it a measure of a change)."""

from __future__ import annotations

import os

import pytest
import redis

from bench.common import instructions
from bench.common.instructions import CountedRedis

pytestmark = pytest.mark.skipif(
    not instructions.available() and os.environ.get("CI") != "true",
    reason="valgrind is not installed (CI installs it)",
)


def _writes(client: redis.Redis, n: int) -> None:
    pipe = client.pipeline(transaction=False)
    for i in range(n):
        pipe.xadd(f"s:{i % 10}", {"d": "x" * 100})
    pipe.execute()


def test_a_block_counts_its_own_work_and_twice_the_work_about_twice() -> None:
    with CountedRedis() as server:
        client = redis.Redis.from_url(server.url)
        _writes(client, 200)  # warm: the keys exist in both blocks
        counts: list[int] = []
        with server.count(counts):
            pass
        with server.count(counts):
            _writes(client, 1000)
        with server.count(counts):
            _writes(client, 2000)
        client.close()
    idle, once, twice = counts
    assert idle < once / 10  # zeroed before each block: nothing of the writes before
    assert 1.7 < twice / once < 2.3

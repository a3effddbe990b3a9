"""The A/B's sizes (one value, passed to each side's driver as JSON)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from typing import Any

from bench.pipeline.e2e import E2EConfig
from bench.pipeline.main import FULL as PIPELINE_FULL

#: The pipeline's headline end-to-end run (1,000 threads x 100 mixed deltas, 10 per
#: thread per bulk of 1,000, batch 1,000, 2 workers).
HEADLINE = PIPELINE_FULL.e2e[0]


@dataclass(frozen=True)
class Sizes:
    """``rounds`` rounds, each one turn per side: the HTTP loads, then one end-to-end run.

    HTTP: ``post_requests`` one-message POSTs over ``post_ids`` threads and
    ``get_requests`` state reads of ``state_threads`` threads of ``state_messages``
    messages, each a closed loop over ``connections`` connections, against one API
    process group of ``api_workers`` uvicorn workers with ``http_celery_workers``
    Celery workers draining; ``warmup_requests`` of each before the first round.
    End to end: ``e2e`` on its own services.
    """

    rounds: int
    connections: int
    post_requests: int
    post_ids: int
    get_requests: int
    state_threads: int
    state_messages: int
    warmup_requests: int
    api_workers: int
    http_celery_workers: int
    e2e: E2EConfig

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Sizes:
        raw: dict[str, Any] = json.loads(text)
        return cls(**{**raw, "e2e": E2EConfig(**raw["e2e"])})

    def with_rounds(self, rounds: int | None) -> Sizes:
        return self if rounds is None else replace(self, rounds=rounds)


FULL = Sizes(rounds=9, connections=32, post_requests=20_000, post_ids=10_000,
             get_requests=8_000, state_threads=64, state_messages=100, warmup_requests=2_000,
             api_workers=1, http_celery_workers=2, e2e=HEADLINE)
QUICK = Sizes(rounds=1, connections=4, post_requests=400, post_ids=50, get_requests=300,
              state_threads=3, state_messages=10, warmup_requests=50, api_workers=1,
              http_celery_workers=1,
              e2e=E2EConfig(threads=100, per_thread=20, bulk=200, run=5, batch_size=1000,
                            workers=1))

"""A producer process for the distributed tests: random deltas, every outcome recorded.

    python -m tests.workers.produce SEED THREADS DELTAS OUT.jsonl

Settings come from ``THREADFOLD_*``. Each accepted delta is written as one JSON line
(ref, version, duplicate, raw messages, stamped ids) *after* its enqueue returned, so
the file lists exactly what the producer was promised.
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Iterator
from typing import Any

from threadfold.core.results import Appended
from threadfold.workers.ingest.producer import Delta, Producer
from threadfold.workers.redisio.client import sync_client
from threadfold.workers.runtime.app import CeleryWaker, make_celery
from threadfold.workers.settings import Settings

POOL = [str(i) for i in range(8)]


def random_messages(rng: random.Random, step: int) -> list[Any]:
    """Appends, updates, removes (known and unknown), REMOVE_ALL, id-less messages."""
    out: list[Any] = []
    for _ in range(rng.randint(1, 3)):
        roll = rng.random()
        ident = rng.choice(POOL)
        if roll < 0.45:
            out.append(
                {"role": rng.choice(["user", "assistant"]), "content": f"s{step}", "id": ident}
            )
        elif roll < 0.6:
            out.append({"type": "tool", "content": f"r{step}", "tool_call_id": "c", "id": ident})
        elif roll < 0.8:
            out.append({"type": "remove", "id": rng.choice([*POOL, "nope"]), "content": ""})
        elif roll < 0.84:
            out.append({"type": "remove", "id": "__remove_all__", "content": ""})
        else:
            out.append(rng.choice([f"idless {step}", ["ai", f"pair {step}"]]))
    return out


def _planned(rng: random.Random, seed: int, threads: int, deltas: int, prefix: str) -> list[Delta]:
    """The deltas, retries of a delta_id within the same call included."""
    out: list[Delta] = []
    for step in range(deltas):
        thread = f"{prefix}{rng.randrange(threads)}"
        messages = random_messages(rng, step)
        delta_id = f"{seed}-{step}" if rng.random() < 0.3 else None
        out.append(Delta(thread, messages, delta_id))
        if delta_id and rng.random() < 0.5:
            out.append(Delta(thread, messages, delta_id))
    return out


def main(seed: int, threads: int, deltas: int, out_path: str, prefix: str = "t") -> None:
    """Odd seeds enqueue delta by delta (``enqueue_many`` of one delta and its retry);
    even seeds stream bulks of 1 to 40 deltas (``enqueue_stream``, one bulk in flight)."""
    settings = Settings()
    rng = random.Random(seed)
    app = make_celery(settings)
    producer = Producer(
        sync_client(settings.redis_url.get_secret_value(), cluster=settings.cluster, retries=0),
        settings,
        CeleryWaker(app, settings.queue),
    )
    planned = _planned(rng, seed, threads, deltas, prefix)
    answers: Iterator[list[Appended]]
    if seed % 2:
        calls: list[list[Delta]] = []
        for delta in planned:
            if calls and calls[-1][0] is delta:  # its retry goes in the same call
                calls[-1].append(delta)
            else:
                calls.append([delta])
        answers = (producer.enqueue_many(call) for call in calls)
    else:
        calls, at = [], 0
        while at < len(planned):
            size = rng.randint(1, 40)
            calls.append(planned[at : at + size])
            at += size
        answers = producer.enqueue_stream(calls)
    with open(out_path, "w") as out:
        # Written as each call is answered: the file lists what the producer was promised.
        for call, results in zip(calls, answers, strict=True):
            for delta, result in zip(call, results, strict=True):
                row = {
                    "ref": f"_/{delta.thread_id}",
                    "version": result.version,
                    "duplicate": result.duplicate,
                    "messages": delta.messages,
                    "ids": result.ids,
                }
                out.write(json.dumps(row) + "\n")
                if delta.delta_id and rng.random() < 0.1:  # a later retry
                    again = producer.enqueue(
                        delta.thread_id, delta.messages, delta_id=delta.delta_id
                    )
                    assert again.duplicate and again.version == result.version
    app.close()


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], *(sys.argv[5:6] or []))

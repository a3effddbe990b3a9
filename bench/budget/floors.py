"""The floors: the least each part could spend on a delta, measured on the same deltas.

* producer: the delta encoded as msgpack (msgspec, the message dicts as given), and a
  bare redis-py pipeline of one ``XADD`` (the payload, to the thread's stream) and one
  ``HSET`` (the thread's version, in a hash of its own) per delta, ``PIPELINE``
  deltas a round trip: the client CPU of both;
* Redis: the state Redis's CPU for those ``XADD`` + ``HSET`` pairs;
* API: ``GET /healthz`` of the same API process, one request at a time from one
  keep-alive connection (as the HTTP client sends its POSTs), its CPU per request:
  the framework and the server, no route of ours (and this process's CPU per
  request: the HTTP client's floor);
* workers: the delta's log payload decoded (msgpack into the message Structs, as the
  log holds it) and one step of the fold (``ThreadFold.apply`` of its message and the
  batch's effect taken), in this process, one fold per thread.

The in-process floors are a few microseconds a delta: each is looped ``REPEATS`` times
and the total CPU divided, so the clock's granularity and one stray interrupt do not
decide them.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Final

import httpx
import msgspec

from bench.budget.spread import Call
from bench.common.cpu import redis_cpu, tree_cpu
from bench.common.stack import Api, Stack
from bench.pipeline.workload import Planned
from threadfold.core import ThreadFold, to_message
from threadfold.core.codec import decode_messages, encode_messages

#: Deltas a round trip of the bare pipeline.
PIPELINE: Final = 100
REPEATS: Final = 5


def encode_us(sent: Sequence[Call]) -> float:
    """msgpack of each delta's message list, as the caller gave it."""
    encode = msgspec.msgpack.Encoder().encode
    started = time.process_time()
    for _ in range(REPEATS):
        for _thread, messages in sent:
            encode(messages)
    return (time.process_time() - started) / (REPEATS * len(sent)) * 1e6


def bare_writes(stack: Stack, sent: Sequence[Call], prefix: str) -> dict[str, float]:
    """The pipelined XADD + HSET per delta: client and Redis CPU per delta. The keys are
    the floor's own, deleted afterwards (outside the window)."""
    encode = msgspec.msgpack.Encoder().encode
    rows = [(f"floor:{prefix}:{t}:log", f"floor:{prefix}:{t}:meta", encode(m))
            for t, m in sent]
    client = stack.client
    redis_before, started = redis_cpu(client), time.process_time()
    for at in range(0, len(rows), PIPELINE):
        pipe = client.pipeline(transaction=False)
        for i, (log, meta, payload) in enumerate(rows[at : at + PIPELINE], start=at):
            pipe.xadd(log, {"d": payload})
            pipe.hset(meta, "v", i)
        pipe.execute()
    client_cpu = time.process_time() - started
    redis_used = redis_cpu(client) - redis_before
    keys = sorted({k for log, meta, _ in rows for k in (log, meta)})
    for at in range(0, len(keys), 1000):
        client.delete(*keys[at : at + 1000])
    n = len(rows)
    return {"write_client_us": client_cpu / n * 1e6, "write_redis_us": redis_used / n * 1e6}


def healthz(api: Api, requests: int) -> tuple[dict[str, float], int]:
    """``GET /healthz`` ``requests`` times: the API's and this process's CPU per request,
    and how many answers were not 200 (a floor of errors is no floor)."""
    with httpx.Client(base_url=api.url, headers={"accept": "application/json"}) as http:
        http.get("/healthz")  # the connection opened before the clock
        bad = 0
        api_before, started = tree_cpu(api.process.pid), time.process_time()
        for _ in range(requests):
            bad += http.get("/healthz").status_code != 200
        here = time.process_time() - started
        used = tree_cpu(api.process.pid) - api_before
    return {"healthz_api_us": used / requests * 1e6,
            "healthz_client_us": here / requests * 1e6}, bad


def log_payloads(planned: Sequence[Planned]) -> list[tuple[int, bytes]]:
    """Each delta as the log holds it (its message converted, an id stamped on an id-less
    append, encoded as ingestion encodes it), with its thread's index."""
    out = []
    for i, p in enumerate(planned):
        message = to_message(p.message)
        if message.id is None:
            message = msgspec.structs.replace(message, id=f"floor-{i}")
        out.append((p.thread, encode_messages([message])))
    return out


def decode_fold(payloads: Sequence[tuple[int, bytes]],
                threads: int) -> tuple[float, list[int]]:
    """Decode + one fold step per delta: CPU µs per delta, and each thread's message count
    at the end (checked against the stored states: the floor did the work)."""
    total = 0.0
    folds: list[ThreadFold] = []
    for _ in range(REPEATS):
        folds = [ThreadFold() for _ in range(threads)]
        started = time.process_time()
        for thread, payload in payloads:
            fold = folds[thread]
            fold.apply(decode_messages(payload))
            fold.take_effect()
        total += time.process_time() - started
    return total / (REPEATS * len(payloads)) * 1e6, [len(f.positions) for f in folds]


def measure(stack: Stack, api: Api, sent: Sequence[Call], planned: Sequence[Planned], *,
            threads: int, prefix: str) -> tuple[dict[str, Any], list[int]]:
    """Every floor of one round, and the floor fold's message count per thread."""
    payloads = log_payloads(planned)
    figures: dict[str, Any] = {"encode_us": encode_us(sent)}
    figures |= bare_writes(stack, sent, prefix)
    http, bad = healthz(api, len(sent))
    figures |= http
    figures["healthz_not_ok"] = bad
    figures["decode_fold_us"], lengths = decode_fold(payloads, threads)
    return figures, lengths

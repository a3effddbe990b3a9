"""The commit clock: a process on a raw Redis Pub/Sub connection subscribed to every
benchmarked thread's feed channel (``Keyspace.thread(ref).feed``), stamping each
PUBLISH of COMMIT as it arrives.

COMMIT publishes inside its script, so the message leaves Redis as the commit ends;
a process doing nothing but read them sees it within about a millisecond (it is
itself a process on a busy machine: the stamp is a commit's upper bound, which makes
the commit-to-event latency measured from it, if anything, smaller than the truth).
"""

from __future__ import annotations

import time
from array import array
from collections.abc import Sequence
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Event
from typing import Any, Final

import redis

from bench.live.clients import version_key
from threadfold.workers.storage.feed_record import decode

NAME: Final = "bench-live-listener"


def run(url: str, channels: Sequence[str], *, ready: Event, stop: Event,
        conn: Connection) -> None:
    """Stamp every message on ``channels`` until ``stop``, then send them on ``conn``:
    thread index, version key, time (``time.time()``), and the resyncs seen."""
    index = {c.encode(): i for i, c in enumerate(channels)}
    client = redis.Redis.from_url(url, client_name=NAME)
    pubsub = client.pubsub()
    pubsub.subscribe(*channels)
    threads, keys, times = array("H"), array("q"), array("d")
    resyncs = confirmed = 0
    while not stop.is_set():
        message = pubsub.get_message(timeout=0.2)
        if message is None:
            continue
        at = time.time()
        if message["type"] == "subscribe":
            confirmed += 1
            if confirmed == len(channels):
                ready.set()
            continue
        if message["type"] != "message":
            continue
        event = decode(message["data"])
        if event is None:
            resyncs += 1
            continue
        threads.append(index[message["channel"]])
        keys.append(version_key(event.version))
        times.append(at)
    result: dict[str, Any] = {"threads": threads, "keys": keys, "times": times,
                              "resyncs": resyncs, "cpu": time.process_time()}
    conn.send(result)
    pubsub.close()
    client.close()

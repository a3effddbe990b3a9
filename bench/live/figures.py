"""What the subscribers run comes to: latencies from the stamps, states against
``GET state``, the API's memory over time, CPU per process, Redis connections."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Spread:
    """Percentiles of a sample, in milliseconds."""

    count: int
    p50: float
    p90: float
    p99: float
    p999: float
    max: float

    @classmethod
    def of(cls, seconds: np.ndarray[Any, np.dtype[np.float64]]) -> Spread:
        if len(seconds) == 0:
            return cls(0, 0.0, 0.0, 0.0, 0.0, 0.0)
        ms = seconds * 1000.0
        p50, p90, p99, p999 = np.percentile(ms, [50, 90, 99, 99.9])
        return cls(len(ms), float(p50), float(p90), float(p99), float(p999), float(ms.max()))


def _joined(threads: Any, keys: Any, base: int) -> np.ndarray[Any, np.dtype[np.int64]]:
    """(thread, version) as one integer: the thread above bit 48, the version key (ms <<
    20 | seq) relative to ``base`` below (a run of hours fits in 47 bits); -1 for a
    version before ``base``."""
    rel = np.asarray(keys, dtype=np.int64) - base
    joined = np.asarray(threads, dtype=np.int64) << 48 | rel
    return np.where(rel < 0, -1, joined)


def latencies(commits: Mapping[str, Any], received: Sequence[Mapping[str, Any]]
              ) -> tuple[Spread, Spread, int]:
    """Commit-to-event (the listener's stamp of a version to a subscriber's receipt of
    it) and enqueue-to-event (the version's own time, when its batch's last delta was
    appended, on Redis's clock), and how many receipts the listener had no stamp for."""
    base = int(min(commits["keys"])) if len(commits["keys"]) else 0
    stamp = _joined(commits["threads"], commits["keys"], base)
    order = np.argsort(stamp)
    stamp, at = stamp[order], np.asarray(commits["times"])[order]
    lat: list[np.ndarray[Any, np.dtype[np.float64]]] = []
    enq: list[np.ndarray[Any, np.dtype[np.float64]]] = []
    unmatched = 0
    for part in received:
        got = _joined(part["threads"], part["keys"], base)
        times = np.asarray(part["times"])
        where = np.minimum(np.searchsorted(stamp, got), max(len(stamp) - 1, 0))
        found = (stamp[where] == got) & (got >= 0) if len(stamp) else got < -1
        unmatched += int((~found).sum())
        lat.append(times[found] - at[where[found]])
        keys = np.asarray(part["keys"], dtype=np.int64)
        enq.append(times - (keys >> 20) / 1000.0)
    empty = np.zeros(0)
    return (Spread.of(np.concatenate(lat) if lat else empty),
            Spread.of(np.concatenate(enq) if enq else empty), unmatched)


@dataclass
class Memory:
    """The API process tree's RSS (MB) sampled over the run: (seconds, MB) pairs."""

    samples: list[tuple[float, float]] = field(default_factory=list)

    def summary(self) -> dict[str, float]:
        mb = [m for _, m in self.samples] or [0.0]
        return {"start_mb": mb[0], "peak_mb": max(mb), "end_mb": mb[-1],
                "samples": len(self.samples)}


@dataclass
class LiveResult:
    """Everything the subscribers run measured and checked."""

    config: dict[str, Any]
    produced: dict[str, Any]
    versions: int
    resyncs_published: int
    commit_to_event: Spread
    enqueue_to_event: Spread
    unmatched: int
    changes_received: int
    subscriptions: int
    mismatches: int
    mismatch_examples: list[str]
    snapshots: dict[str, int]
    ends: dict[str, int]
    chain_breaks: int
    finish_seconds: float
    memory: Memory
    cpu: dict[str, float]
    window_seconds: float
    redis_clients: dict[str, Any]
    api_redis: dict[str, Any]

    @property
    def events_per_second(self) -> float:
        return self.changes_received / self.window_seconds if self.window_seconds else 0.0

    def cpu_us(self, who: str, per: float) -> float:
        return self.cpu.get(who, 0.0) / per * 1e6 if per else 0.0

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["memory"] = {**self.memory.summary(), "series": self.memory.samples}
        data["events_per_second"] = self.events_per_second
        data["api_cpu_us_per_event"] = self.cpu_us("api", self.changes_received)
        data["client_cpu_us_per_event"] = self.cpu_us("clients", self.changes_received)
        return data

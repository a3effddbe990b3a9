"""One scenario on one configuration, summed up over its rounds (medians, and ratios to
``/healthz`` measured in the same round)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bench.http.runs import Run

HEALTHZ = "healthz"
POST = "post-10k"
STATE = "state"
BULK = "bulk"


def _median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else 0.0


@dataclass(frozen=True)
class Summary:
    """One scenario on one configuration, medians over its rounds."""

    scenario: str
    variant: str
    runs: tuple[Run, ...]
    healthz: tuple[Run, ...]

    def median(self, key: Any) -> float:
        return _median([float(key(r)) for r in self.runs])

    @property
    def rps(self) -> float:
        return self.median(lambda r: r.rps)

    @property
    def rps_range(self) -> tuple[float, float]:
        values = [r.rps for r in self.runs]
        return min(values), max(values)

    @property
    def deltas_per_s(self) -> float:
        return self.median(lambda r: r.deltas_per_s)

    @property
    def bulk(self) -> bool:
        return self.runs[0].scenario.per_request > 1

    def _paired(self, key: Any) -> float:
        """Median over rounds of this run's ``key`` over healthz's in the same round."""
        by_round = {h.round: h for h in self.healthz}
        ratios = [key(r) / key(by_round[r.round]) for r in self.runs
                  if r.round in by_round and key(by_round[r.round])]
        return _median(ratios)

    @property
    def rps_vs_healthz(self) -> float:
        """Requests/s over healthz's; for bulk, deltas/s over healthz's requests/s."""
        if self.bulk:
            return self._paired(lambda r: r.deltas_per_s if r.scenario.per_request > 1
                                else r.rps)
        return self._paired(lambda r: r.rps)

    @property
    def cpu_vs_healthz(self) -> float:
        """API CPU per request over healthz's; for bulk, per delta."""
        if self.bulk:
            return self._paired(lambda r: r.api_us / r.scenario.per_request)
        return self._paired(lambda r: r.api_us)

    @property
    def ok(self) -> bool:
        return all(r.check.ok for r in self.runs)

    @property
    def failed(self) -> list[str]:
        return [f"{r.check.name}: {r.check.detail}" for r in self.runs if not r.check.ok]

    def to_json(self) -> dict[str, Any]:
        lo, hi = self.rps_range
        return {
            "scenario": self.scenario, "variant": self.variant, "rounds": len(self.runs),
            "rps_median": self.rps, "rps_min": lo, "rps_max": hi,
            "deltas_per_s_median": self.deltas_per_s,
            "rps_vs_healthz": self.rps_vs_healthz, "api_cpu_vs_healthz": self.cpu_vs_healthz,
            "p50_ms_median": self.median(lambda r: r.wrk.p50_ms),
            "p99_ms_median": self.median(lambda r: r.wrk.p99_ms),
            "api_cpu_us_per_request_median": self.median(lambda r: r.api_us),
            "api_cpu_kernel_share_median": self.median(lambda r: r.api_sys_share),
            "all_sides_cpu_us_per_request_median": self.median(lambda r: r.all_us),
            "estimate_rps_two_idle_cores_median": self.median(lambda r: r.idle_estimate),
            "redis_cpu_us_per_request_median": self.median(lambda r: r.redis_us),
            "worker_cpu_us_per_delta_median": self.median(lambda r: r.worker_us_per_delta),
            "wrk_cpu_us_per_request_median": self.median(lambda r: r.wrk_us),
            "wrk_core_share_median": self.median(lambda r: r.wrk.cpu_share),
            "other_processes_cores_median": self.median(lambda r: r.others_cores),
            "backlog_deltas_median": self.median(lambda r: r.drain.deltas if r.drain else 0),
            "drain_seconds_median": self.median(lambda r: r.drain.seconds if r.drain else 0),
            "kept_up": [r.kept_up for r in self.runs],
            "verified": self.ok,
        }


def summarize(runs: Sequence[Run]) -> list[Summary]:
    keys = list(dict.fromkeys((r.scenario.name, r.variant.name) for r in runs))
    out = []
    for scenario, variant in keys:
        mine = tuple(r for r in runs if r.scenario.name == scenario and r.variant.name == variant)
        healthz = tuple(r for r in runs if r.scenario.name == HEALTHZ
                        and r.variant.name == variant)
        out.append(Summary(scenario, variant, mine, healthz))
    return out

"""What the A/B reports: per side and round a few figures, their medians, and per round
head / base with its median; the judged figures must stay within 5% of base."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

#: A judged figure passes when the median head / base is at most this (faster passes).
LIMIT: Final = 1.05


@dataclass(frozen=True)
class Figure:
    """One figure of a side's turn: ``read`` takes the turn's ``{"http", "e2e"}``."""

    key: str
    label: str
    read: Callable[[dict[str, Any]], float]
    judged: bool = False


def _post(key: str) -> Callable[[dict[str, Any]], float]:
    return lambda turn: float(turn["http"]["post"]["cpu_us_per_request"][key])


def _get(key: str) -> Callable[[dict[str, Any]], float]:
    return lambda turn: float(turn["http"]["get"]["cpu_us_per_request"][key])


def _e2e(*keys: str) -> Callable[[dict[str, Any]], float]:
    return lambda turn: sum(float(turn["e2e"][k]) for k in keys)


FIGURES: Final = (
    Figure("http_post_api_us", "API CPU µs per POST /threads/{id}/deltas", _post("api"),
           judged=True),
    Figure("http_get_api_us", "API CPU µs per GET /threads/{id}/state", _get("api"),
           judged=True),
    Figure("e2e_cpu_per_delta_us", "end to end CPU µs per delta (producer, workers, Redis)",
           _e2e("cpu_per_delta_us"), judged=True),
    Figure("http_post_worker_us_per_delta", "workers' CPU µs per delta under the POSTs "
           "(drain included)",
           lambda turn: float(turn["http"]["post"]["worker_cpu_us_per_delta"])),
    Figure("http_post_redis_us", "Redis CPU µs per POST (state + broker)",
           _post("redis_state+broker")),
    Figure("http_get_redis_us", "Redis CPU µs per GET", _get("redis_state+broker")),
    Figure("http_post_all_us", "all CPU µs per POST (API, Redis, workers, generator)",
           _post("all_sides")),
    Figure("e2e_producer_us", "end to end: producer CPU µs per delta", _e2e("producer_us")),
    Figure("e2e_worker_us", "end to end: workers' CPU µs per delta", _e2e("worker_us")),
    Figure("e2e_redis_us", "end to end: Redis CPU µs per delta (state + broker)",
           _e2e("redis_us", "broker_us")),
    Figure("http_post_rps", "POSTs answered per second (closed loop)",
           lambda turn: float(turn["http"]["post"]["rps"])),
    Figure("http_get_rps", "GETs answered per second (closed loop)",
           lambda turn: float(turn["http"]["get"]["rps"])),
    Figure("e2e_rate", "end to end deltas/s", _e2e("rate")),
)


def figures(turn: dict[str, Any]) -> dict[str, float]:
    return {f.key: f.read(turn) for f in FIGURES}


def medians(turns: list[dict[str, Any]]) -> dict[str, float]:
    return {f.key: statistics.median(t["figures"][f.key] for t in turns) for f in FIGURES}


def ratios(head: list[dict[str, Any]], base: list[dict[str, Any]]) -> dict[str, list[float]]:
    """Per round, head / base of every figure (0 where base measured 0)."""
    return {f.key: [h["figures"][f.key] / b["figures"][f.key] if b["figures"][f.key] else 0.0
                    for h, b in zip(head, base, strict=True)] for f in FIGURES}


def judged(median_ratio: dict[str, float]) -> dict[str, dict[str, Any]]:
    return {f.key: {"label": f.label, "median_ratio": median_ratio[f.key],
                    "within_5pct": 0 < median_ratio[f.key] <= LIMIT}
            for f in FIGURES if f.judged}


def markdown(data: dict[str, Any]) -> str:
    """The A/B's table: per figure both sides' medians, head / base per round and its
    median; then the judged figures and any problem."""
    base, head = data["base"], data["head"]
    dirty = ", uncommitted changes" if head["dirty"] else ""
    lines = [f"A/B: base `{base['commit'][:9]}` ({base['kind']}), head "
             f"`{head['commit'][:9]}` ({head['kind']}{dirty}), "
             f"{len(data['order'])} rounds, orders {', '.join(data['order'])}",
             "", "| figure | base, median | head, median | head / base per round | median |",
             "|---|---|---|---|---|"]
    for f in FIGURES:
        per_round = ", ".join(f"{r:.3f}" for r in data["ratios"][f.key])
        lines.append(f"| {f.label}{' (judged)' if f.judged else ''} | "
                     f"{base['medians'][f.key]:,.1f} | {head['medians'][f.key]:,.1f} | "
                     f"{per_round} | **{data['median_ratio'][f.key]:.3f}** |")
    lines.append("")
    for key, verdict in data["judged"].items():
        lines.append(f"- {verdict['label']}: head / base {verdict['median_ratio']:.3f}, "
                     f"{'within' if verdict['within_5pct'] else 'NOT within'} 5% ({key})")
    lines += [f"- PROBLEM: {p}" for p in data["problems"]]
    return "\n".join(lines)

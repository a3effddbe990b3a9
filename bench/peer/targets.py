"""The peer benchmark's targets (issue 24): threadfold through ``Client`` at least 100x
the better LangGraph configuration's deltas/s, through ``HttpClient`` at least 30x, at
each thread length (medians of the rounds)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any, Final

from bench.common.target import Target

GOALS: Final = {"client": 100.0, "http": 30.0}


def best_peer(median: dict[str, dict[str, float]]) -> tuple[str, float]:
    """The better LangGraph configuration and its rate."""
    kind = max(("langgraph", "langgraph-delta"), key=lambda k: median[k]["rate"])
    return kind, median[kind]["rate"]


def judge(shapes: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    targets = []
    for shape in shapes:
        median, length = shape["median"], shape["shape"]["length"]
        peer, peer_rate = best_peer(median)
        for kind, goal in GOALS.items():
            ratio = median[kind]["rate"] / peer_rate if peer_rate > 0 else 0.0
            targets.append(asdict(Target(
                f"{kind} vs {peer}, {length:,} messages a thread", f">= {goal:.0f}x",
                f"{ratio:.1f}x", ratio >= goal,
                f"{median[kind]['rate']:,.0f} vs {peer_rate:,.0f} deltas/s")))
    return targets

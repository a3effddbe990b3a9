"""The replay results as markdown."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bench.common.tables import table
from bench.replay.targets import best


def render(rows: Sequence[dict[str, Any]], verdict: dict[str, Any], machine: str) -> str:
    head = ["shape", "op", "processes", "deltas/s (best)", "all rounds", "client µs/delta",
            "Redis µs/delta"]
    body = []
    for (shape, op, processes), row in best(rows).items():
        rounds = ", ".join(f"{r['rate'] / 1000:.1f}k" for r in rows
                           if (r["shape"], r["op"], r["processes"]) == (shape, op, processes))
        body.append([shape, op, str(processes), f"{row['rate']:,.0f}", rounds,
                     f"{row['client_cpu_us_per_delta']:.1f}",
                     f"{row['redis_cpu_us_per_delta']:.1f}"])
    lines = [f"Machine: {machine}", "", *table(head, body), "",
             f"Target: {verdict['goal']}: {verdict['value']}: "
             f"{'pass' if verdict['passed'] else 'FAIL'}"]
    return "\n".join(lines)

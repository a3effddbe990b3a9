"""The replay target, judged on one run's rows: the best round of each configuration; a
wrong run fails it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

TARGET = 50_000.0


def best(rows: Sequence[dict[str, Any]]) -> dict[tuple[str, str, int], dict[str, Any]]:
    """The best round of each (shape, op, processes)."""
    out: dict[tuple[str, str, int], dict[str, Any]] = {}
    for row in rows:
        key = (row["shape"], row["op"], row["processes"])
        if key not in out or row["rate"] > out[key]["rate"]:
            out[key] = row
    return out


def judge(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Audit and rebuild at >= 50k deltas/s with 2 processes, every shape, runs right."""
    top = best(rows)
    judged = [r for (_, _, p), r in top.items() if p == max(k[2] for k in top)]
    worst = min(judged, key=lambda r: r["rate"])
    wrong = [r for r in rows if r["check"] != "ok"]
    return {
        "name": "audit and rebuild, deltas replayed per second",
        "goal": f">= {TARGET:,.0f}/s on the 2 cores, every shape",
        "value": f"min {worst['rate']:,.0f}/s ({worst['shape']}, {worst['op']}, "
                 f"{worst['processes']} processes)",
        "passed": worst["rate"] >= TARGET and not wrong,
        "wrong_runs": len(wrong),
    }

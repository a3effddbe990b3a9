"""The scale run's markdown."""

from __future__ import annotations

import statistics
from typing import Any

from bench.common.tables import table

#: Issue 25's targets: CPU per delta against one primary and one worker's; the quiet
#: tenant's p99 beside a flood against its own alone.
SCALE_LIMIT = 1.2
FAIRNESS_LIMIT = 2.0


def _grid(results: dict[str, Any]) -> list[str]:
    base = results["base_total_us"]
    cells: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for r in results["grid"]:
        cells.setdefault((r["primaries"], r["workers"]), []).append(r)
    rows = []
    for (m, w), seen in sorted(cells.items()):
        def med(key: str, seen: list[dict[str, Any]] = seen) -> float:
            return float(statistics.median(r[key] for r in seen))
        ratio = med("total_us") / base
        rows.append([str(m), str(w), f"{med('rate'):,.0f}", f"{med('producer_us'):.1f}",
                     f"{med('workers_us'):.1f}", f"{med('redis_us'):.1f}",
                     f"{med('broker_us'):.1f}", f"{med('total_us'):.1f}",
                     f"{ratio:.2f}" + ("" if ratio <= SCALE_LIMIT else " (over)")])
    return table(["primaries", "workers", "deltas/s", "producer µs", "workers µs",
                  "Redis µs (all nodes)", "broker µs", "total µs/delta",
                  f"/ 1x1 (≤ {SCALE_LIMIT})"], rows)


def _hot(results: dict[str, Any]) -> list[str]:
    hot = results["hot"]
    got = hot["batch"]
    nodes = [f"{x:.1f}" + (" (hot)" if i == got["hot_node"] else "")
             for i, x in enumerate(got["nodes_us"])]
    lag = hot["lag"]
    return [
        f"Half of every bulk to one thread ({got['rate']:,.0f} deltas/s): each node's CPU "
        f"per delta of the run: {', '.join(nodes)} µs.", "",
        *table(["the other threads, paced", "deltas/s", "p50 ms", "p99 ms"],
               [[name, f"{lag[name]['rate']:,.0f}", f"{lag[name]['p50_ms']:.2f}",
                 f"{lag[name]['p99_ms']:.2f}"] for name in ("without", "with")]),
    ]


def _tenants(results: dict[str, Any]) -> list[str]:
    t = results["tenants"]
    base = max(t["alone"]["p99_ms"], 1e-9)
    rows = []
    for name in t:
        if not isinstance(t[name], dict):
            continue
        flood = f"{t[name]['flood_rate']:,.0f}" if "flood_rate" in t[name] else "-"
        ratio = t[name]["p99_ms"] / base
        verdict = "" if name == "alone" else (" (met)" if ratio <= FAIRNESS_LIMIT else
                                              " (not met)")
        rows.append([name, flood, f"{t[name]['rate']:,.0f}", f"{t[name]['p50_ms']:.2f}",
                     f"{t[name]['p99_ms']:.2f}", f"{ratio:.2f}{verdict}",
                     f"{t[name].get('call_p50_ms', 0):.2f} / {t[name].get('call_p99_ms', 0):.2f}"])
    return [
        *table(["quiet tenant", "flood deltas/s", "quiet deltas/s", "p50 ms", "p99 ms",
                f"p99 / alone (≤ {FAIRNESS_LIMIT})", "its calls p50 / p99 ms"], rows),
        "", f"The share: THREADFOLD_TENANT_RATE={t['flood_share']:g} in the flooding "
        "tenant's process.",
    ]


def render(results: dict[str, Any]) -> str:
    return "\n".join([
        "## Scale-out: CPU per delta (medians of the repeats)", "", *_grid(results), "",
        "## One hot thread", "", *_hot(results), "",
        "## A flooding tenant", "", *_tenants(results), "",
    ])

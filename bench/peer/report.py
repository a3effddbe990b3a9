"""The peer results as markdown (the tables of docs/benchmarks.md's section)."""

from __future__ import annotations

from typing import Any, Final

from bench.common.tables import rate, report, table, target_table
from bench.common.target import Target
from bench.peer.sides import BULK
from bench.peer.targets import best_peer

NAMES: Final = {
    "langgraph": "LangGraph, `add_messages`, PostgresSaver",
    "langgraph-delta": "LangGraph, `DeltaChannel`, PostgresSaver",
    "client": "threadfold `Client`",
    "http": "threadfold `HttpClient`",
    "client-bulk": f"threadfold `Client.append_many`, {BULK} deltas a call (not judged)",
}


def _shape_table(shape: dict[str, Any], writers: int) -> list[str]:
    s, median = shape["shape"], shape["median"]
    _, peer_rate = best_peer(median)
    head = ["contender", "threads x deltas", "deltas/s", "x best LangGraph",
            "CPU µs/delta (writers + services)", "call p99 ms", "visible p50 / p99 ms"]
    rows = []
    for kind, m in median.items():
        threads = s["peer_threads"] if kind.startswith("langgraph") else s["threads"]
        rows.append([NAMES[kind], f"{threads:,} x {s['per_thread']}", rate(m["rate"]),
                     f"{m['rate'] / peer_rate:,.1f}x" if peer_rate else "-",
                     f"{m['cpu_us']:,.0f} ({m['writer_cpu_us']:,.0f} + "
                     f"{m['service_cpu_us']:,.0f})",
                     f"{m['call_p99_ms']:,.1f}",
                     f"{m['visible_p50_ms']:,.1f} / {m['visible_p99_ms']:,.1f}"])
    title = (f"Threads of {s['length']:,} messages, {s['per_thread']} one-message deltas "
             f"each (70% appends, 20% edits, 10% removes), spread, {writers} writer "
             "processes; medians of the rounds")
    return [title, "", *table(head, rows)]


def render(data: dict[str, Any]) -> str:
    meta = data["meta"]
    sections = [_shape_table(shape, meta["writers"]) for shape in data["shapes"]]
    targets = [Target(**t) for t in data["targets"]]
    sections.append(["Targets", "", *target_table(targets)])
    sections.append([f"{meta['rounds']} round(s), order alternated; load "
                     f"{meta['load_before_after']}; code {meta['code']}; "
                     f"{meta['seconds']:.0f} s"])
    return report(sections)

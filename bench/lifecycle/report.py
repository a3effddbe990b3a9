"""The lifecycle results as markdown (the tables of docs/benchmarks.md's section)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bench.common.tables import table
from bench.lifecycle.memory import BUCKET_KEYS, THREAD_KEYS


def _variant(run: dict[str, Any]) -> str:
    return "metadata" if run["metadata"] else "none"


def _kb(n: float) -> str:
    return f"{n / 1024:,.1f} KiB"


def memory_table(runs: Sequence[dict[str, Any]]) -> list[str]:
    head = ["threads", "metadata", "load: s (threads/s)", "CPU µs/thread: loaders, Redis",
            "used_memory per idle thread", "of it: expiry entry", "after the sweep vs empty"]
    body = []
    for r in runs:
        ld, expiry = r["load"], r["breakdown"]["bucket_keys"]["expiry"]
        share = r["residue_share"]
        body.append([
            f"{r['threads']:,}", _variant(r),
            f"{ld['seconds']:,.0f} ({ld['threads_per_second']:,.0f}/s)",
            f"{ld['loaders_cpu_us_per_thread']:.0f}, {ld['redis_cpu_us_per_thread']:.0f}",
            f"**{r['bytes_per_thread']:,.0f} B**", f"{expiry:.0f} B",
            f"{r['residue_bytes']:+,} B on {_kb(r['baseline']['used_memory'])} "
            f"(**{share:+.2%}**)",
        ])
    return table(head, body)


def residue_table(runs: Sequence[dict[str, Any]]) -> list[str]:
    """What the difference after the sweep is made of: INFO memory's parts, which add up
    to it, and the keys left (their MEMORY USAGE counts their entries in the keyspace
    table as well: that column overlaps the others)."""
    head = ["threads", "metadata", "used_memory: empty, after the sweep", "keys' data",
            "keyspace table", "clients", "script cache", "rest", "keys left (MEMORY USAGE)"]
    body = []
    for r in runs:
        before, after = r["baseline"], r["after"]
        parts = {name: after[field] - before[field] for name, field in (
            ("data", "used_memory_dataset"), ("table", "keyspace_tables"),
            ("clients", "mem_clients_normal"), ("scripts", "used_memory_scripts"))}
        # The overhead's part beyond the keyspace table, the clients and the scripts.
        overhead = after["used_memory_overhead"] - before["used_memory_overhead"]
        rest = overhead - parts["table"] - parts["clients"] - parts["scripts"]
        left = "; ".join(f"{kind}: {v['keys']:,} keys, {v['bytes']:,} B"
                         for kind, v in r["leftovers"].items())
        body.append([f"{r['threads']:,}", _variant(r),
                     f"{before['used_memory']:,} → {after['used_memory']:,} B "
                     f"({r['residue_bytes']:+,})",
                     f"{parts['data']:+,}", f"{parts['table']:+,}", f"{parts['clients']:+,}",
                     f"{parts['scripts']:+,}", f"{rest:+,}", left or "none"])
    return table(head, body)


def breakdown_table(runs: Sequence[dict[str, Any]]) -> list[str]:
    head = ["bytes per thread (MEMORY USAGE)"] + [f"{r['threads']:,}, {_variant(r)}"
                                                  for r in runs]
    rows = []
    for name in THREAD_KEYS:
        values = [r["breakdown"]["thread_keys"][name] for r in runs]
        if any(values):
            rows.append([f"thread's `{name}`", *(f"{v:.0f}" for v in values)])
    for name in BUCKET_KEYS:
        values = [r["breakdown"]["bucket_keys"][name] for r in runs]
        if any(values):
            rows.append([f"bucket's `{name}`", *(f"{v:.1f}" for v in values)])
    rows.append(["sum", *(f"{r['breakdown']['total']:.0f}" for r in runs)])
    rows.append(["used_memory per thread", *(f"{r['bytes_per_thread']:.0f}" for r in runs)])
    return table(head, rows)


def sweep_table(runs: Sequence[dict[str, Any]]) -> list[str]:
    head = ["threads", "metadata", "removed", "passes (limit per bucket)", "seconds",
            "removed/s", "Redis CPU µs/removed", "script wall µs/removed",
            "script wall µs/call"]
    body = []
    for r in runs:
        s = r["sweep"]
        body.append([f"{r['threads']:,}", _variant(r), f"{s['removed']:,}",
                     f"{s['passes']} ({s['limit']})", f"{s['seconds']:.1f}",
                     f"{s['removed_per_second']:,.0f}", f"{s['redis_cpu_us_per_removed']:.1f}",
                     f"{s['script_us_per_removed']:.1f}", f"{s['script_us_per_call']:.0f}"])
    return table(head, body)


def search_table(runs: Sequence[dict[str, Any]]) -> list[str]:
    searched = [r for r in runs if r["search"]]
    if not searched:
        return []
    sizes = [f"{r['threads']:,}" for r in searched]
    head = ["request", "op", *(f"{n}: script calls (rounds)" for n in sizes),
            *(f"{n}: Redis CPU ms" for n in sizes), *(f"{n}: client CPU ms" for n in sizes),
            *(f"{n}: wall ms (median)" for n in sizes)]
    if len(searched) > 1:
        head.append(f"Redis CPU {sizes[-1]} / {sizes[0]}")
    body = []
    for i, first in enumerate(searched[0]["search"]):
        costs = [r["search"][i] for r in searched]
        row = [first["name"], first["op"],
               *(f"{c['script_calls']:,.0f} ({c['rounds']:.2f})" for c in costs),
               *(f"{c['redis_cpu_ms']:.1f}" for c in costs),
               *(f"{c['client_cpu_ms']:.1f}" for c in costs),
               *(f"{c['wall_ms_median']:.0f}" for c in costs)]
        if len(costs) > 1:
            base = costs[0]["redis_cpu_ms"]
            row.append(f"{costs[-1]['redis_cpu_ms'] / base:.1f}x" if base else "—")
        body.append(row)
    return table(head, body)


def render(data: dict[str, Any]) -> str:
    runs, verdict = data["runs"], data["target"]
    lines = [f"Machine: {data['meta']['machine']}; code {data['meta']['code']}", "",
             *memory_table(runs), "", *residue_table(runs), "", *breakdown_table(runs), "",
             *sweep_table(runs), ""]
    found = search_table(runs)
    if found:
        lines += [*found, ""]
    lines.append(f"Target: {verdict['name']}, {verdict['goal']}: {verdict['value']}: "
                 f"{'pass' if verdict['passed'] else 'FAIL'}")
    return "\n".join(lines)

"""The live benchmark's results as markdown (tables from bench.common.tables)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bench.common.tables import rate, table, target_table
from bench.common.target import Target
from bench.live.figures import LiveResult


def targets_section(targets: Sequence[Target]) -> list[str]:
    return ["## Targets", "", *target_table(targets)]


def machine_section(machine: str, extra: dict[str, Any] | None = None) -> list[str]:
    lines = ["## Machine", "", machine]
    for key, value in (extra or {}).items():
        lines.append(f"{key}: {value}")
    return lines


def live_section(r: LiveResult) -> list[str]:
    c, p = r.config, r.produced
    lat, enq = r.commit_to_event, r.enqueue_to_event
    mem = r.memory.summary()
    cores = {k: v / r.window_seconds for k, v in r.cpu.items()}
    ours = sum(v for k, v in cores.items() if k not in ("machine", "api_sys"))
    rows = [
        ["subscribers", f"{r.subscriptions:,} ({c['per_thread']} per thread, {c['threads']} "
                        f"threads, {c['client_processes']} client processes)"],
        ["produced", f"{p['sent']:,} deltas in {p['seconds']:.1f} s = {rate(p['rate'])}/s "
                     f"(asked {rate(c['rate'])}/s; worst lag behind schedule "
                     f"{p['max_behind_s'] * 1000:.0f} ms)"],
        ["versions committed (events published)", f"{r.versions:,} "
                                                 f"({r.versions / p['seconds']:,.0f}/s)"],
        ["change events received", f"{r.changes_received:,} ({rate(r.events_per_second)}/s "
                                   f"over the {r.window_seconds:.1f} s window)"],
        ["commit-to-event ms p50 / p90 / p99 / p99.9 / max",
         f"{lat.p50:.1f} / {lat.p90:.1f} / **{lat.p99:.1f}** / {lat.p999:.1f} / {lat.max:.1f}"],
        ["enqueue-to-event ms (batch's last delta) p50 / p99 / max",
         f"{enq.p50:.1f} / {enq.p99:.1f} / {enq.max:.1f}"],
        ["final states vs GET state", f"{r.mismatches} mismatches of {r.subscriptions}; "
                                      f"chain breaks {r.chain_breaks}; snapshots {r.snapshots}; "
                                      f"streams ended {r.ends or 0}"],
        ["API RSS MB start / peak / end", f"{mem['start_mb']:.0f} / {mem['peak_mb']:.0f} / "
                                          f"{mem['end_mb']:.0f}"],
        ["API CPU per change event sent", f"{r.cpu_us('api', r.changes_received):.1f} us "
                                          f"({r.cpu_us('api_sys', r.changes_received):.1f} "
                                          "in the kernel)"],
        ["subscriber processes' CPU per event",
         f"{r.cpu_us('clients', r.changes_received):.1f} us"],
        ["cores used (window)", ", ".join(f"{k} {v:.2f}" for k, v in cores.items()
                                          if k not in ("machine", "api_sys"))
         + f"; ours {ours:.2f}, machine {cores.get('machine', 0):.2f}"],
        ["API's Redis connections", f"{r.api_redis['connections']} "
                                    f"({r.api_redis['pubsub_connections']} Pub/Sub: "
                                    f"{r.api_redis['pubsub_names']}, channels "
                                    f"{r.api_redis['pubsub_channels']})"],
    ]
    return ["## SSE subscribers", "", *table(["figure", "value"], rows)]


def rates_section(runs: Sequence[LiveResult]) -> list[str]:
    """The subscribers runs side by side: how latency follows the producer's rate."""
    head = ["deltas/s asked / done", "versions/s", "events/s received",
            "commit-to-event ms p50 / p99 / max", "API us/event", "subscribers us/event",
            "cores: ours / machine", "states"]
    rows = []
    for r in runs:
        lat, p = r.commit_to_event, r.produced
        cores = {k: v / r.window_seconds for k, v in r.cpu.items()}
        ours = sum(v for k, v in cores.items() if k not in ("machine", "api_sys"))
        rows.append([f"{rate(r.config['rate'])} / {rate(p['rate'])}",
                     f"{r.versions / p['seconds']:,.0f}", rate(r.events_per_second),
                     f"{lat.p50:.1f} / {lat.p99:.1f} / {lat.max:.1f}",
                     f"{r.cpu_us('api', r.changes_received):.1f}",
                     f"{r.cpu_us('clients', r.changes_received):.1f}",
                     f"{ours:.2f} / {cores.get('machine', 0):.2f}",
                     f"{r.mismatches} mismatches of {r.subscriptions}"])
    return ["## Subscribers by producer rate", "", *table(head, rows)]

"""The pipeline results as markdown tables."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bench.common.tables import rate, report, table, target_table
from bench.common.target import Target
from bench.pipeline.commit_cost import CostRow
from bench.pipeline.e2e import E2EResult
from bench.pipeline.latency import LatencyResult
from bench.pipeline.memory import MemoryRow
from bench.pipeline.naive import NaiveResult
from bench.pipeline.targets import length_ratios


def _ok(check: Any) -> str:
    return "verified" if check.ok else f"WRONG: {check.detail}"


def e2e_table(results: Sequence[E2EResult], headline: E2EResult) -> list[str]:
    head = ["layout", "batch_size", "deltas", "deltas/s", "wall s", "producer alone /s",
            "commits", "deltas/commit", "threads woken", "tasks",
            "CPU us/delta prod / workers / redis / broker", "est. 2 idle cores", "state"]
    rows = []
    for r in results:
        c = r.config
        cpu = " / ".join(f"{r.per_delta_us(x):.0f}" for x in
                         (r.producer_cpu, r.worker_cpu, r.redis_cpu, r.broker_cpu))
        tasks = r.broker_commands.get("lpush")
        mark = " (headline)" if r is headline else ""
        rows.append([f"{c.run}/thread/bulk of {c.bulk}{mark}", str(c.batch_size), f"{r.deltas:,}",
                     rate(r.rate), f"{r.wall_seconds:.1f}", rate(r.deltas / r.produce_seconds),
                     f"{r.commits:,}", f"{r.deltas / max(r.commits, 1):.1f}",
                     f"{r.wakes_sent_by_producer:,}", f"{tasks.calls:,}" if tasks else "-",
                     f"{cpu} = {r.cpu_per_delta_us:.0f}",
                     rate(r.capacity), _ok(r.check)])
    return table(head, rows)


def naive_table(headline: E2EResult, naive: NaiveResult) -> list[str]:
    head = ["system", "deltas", "deltas/s", "worker CPU us/delta", "Redis CPU us/delta", "x",
            "state"]
    rows = [
        ["threadfold (headline run)", f"{headline.deltas:,}", rate(headline.rate),
         f"{headline.per_delta_us(headline.worker_cpu):.0f}",
         f"{headline.per_delta_us(headline.redis_cpu + headline.broker_cpu):.0f}",
         f"{headline.rate / naive.rate:.1f}", _ok(headline.check)],
        [f"naive ({naive.config.threads} threads x {naive.config.per_thread})",
         f"{naive.deltas:,}", f"{naive.rate:.1f}",
         f"{naive.worker_cpu / naive.deltas * 1e6:.0f}",
         f"{naive.redis_cpu / naive.deltas * 1e6:.0f}", "1.0",
         _ok(naive.check) + (f"; {naive.failed} tasks failed" if naive.failed else "")],
    ]
    if naive.floor is not None:
        f = naive.floor
        rows.append([f"Celery floor: no-op tasks ({f.tasks:,})", "-", f"{f.rate:,.0f} tasks/s",
                     f"{f.worker_cpu_us:.0f} per task", "-", "-",
                     f"sender {f.send_cpu_us:.0f} us CPU per task"])
    return table(head, rows)


def cost_table(rows: Sequence[CostRow]) -> list[str]:
    head = ["workload", "batch", "thread length", "best wall us/delta", "median wall",
            "best CPU us/delta (drainer+redis)", "commit us/call", "candidates us/call",
            "commits"]
    body = [[r.workload, str(r.batch_size), f"{r.length:,}", f"{r.best_wall_us:.1f}",
             f"{r.median_wall_us:.1f}", f"{r.best_cpu_us:.1f}",
             f"{r.scripts_us.get('commit', 0):.0f}", f"{r.scripts_us.get('candidates', 0):.0f}",
             str(r.commits)] for r in rows]
    ratios = "; ".join(f"{x.name}: CPU x{x.cpu:.2f}, wall x{x.wall:.2f}"
                       for x in length_ratios(rows))
    return [*table(head, body), "",
            f"Long/short per delta (median of the rounds' ratios): {ratios}"]


def latency_table(results: Sequence[LatencyResult], headline: E2EResult) -> list[str]:
    head = ["calls", "deltas per thread per bulk", "share of headline rate", "target rate",
            "achieved", "deltas", "p50 ms", "p90 ms", "p99 ms", "max ms", "poll loop ms",
            "hand-over p99 / max ms", "poller CPU", "wakes", "tasks", "worker CPU us/delta",
            "state"]
    return table(head, [[_CALLS[r.config.calls], str(r.config.run),
                          f"{r.config.rate / headline.rate:.2f}",
                          f"{r.config.rate:,.0f}/s",
                          f"{r.achieved_rate:,.0f}/s", f"{r.deltas:,}", f"{r.p50_ms:.1f}",
                          f"{r.p90_ms:.1f}", f"{r.p99_ms:.1f}", f"{r.max_ms:.0f}",
                          f"{r.mean_poll_ms:.1f}",
                          f"{r.handoff_p99_ms:.1f} / {r.handoff_max_ms:.0f}",
                          f"{r.poller_cpu_share:.0%}",
                          f"{r.wakes_sent_by_producer:,}", f"{r.tasks:,}",
                          f"{r.worker_cpu_us:.0f}", _ok(r.check)] for r in results])


_CALLS = {"bulk": "enqueue_many per tick", "one": "enqueue per delta",
          "one+background": "enqueue per delta, BackgroundWaker"}


def memory_table(rows: Sequence[MemoryRow]) -> list[str]:
    head = ["message", "server config", "per thread", "N", "msgpack B", "used B/msg", "ratio",
            "+ fresh feed B/msg", "pages B/msg", "index B/msg", "encodings", "append drain us",
            "update drain us"]
    body = [[r.variant, r.config, f"{r.per_thread:,}", f"{r.messages:,}",
             f"{r.msgpack_mean:.0f}", f"{r.used_per_message:.0f}", f"x{r.ratio:.2f}",
             f"{r.feed_per_message:.0f}",
             f"{r.keys_per_message['pages']:.0f}", f"{r.keys_per_message['index']:.0f}",
             "/".join(r.encodings.values()), f"{r.append_drain_us:.1f}",
             f"{r.update_drain_us:.1f}"] for r in rows]
    return table(head, body)


def commands_table(stats: Mapping[str, Any], n: int = 10) -> list[str]:
    head = ["command (state Redis, headline run)", "calls", "usec/call", "total ms"]
    top = sorted(stats.items(), key=lambda kv: -kv[1].usec)[:n]
    return table(head, [[k, f"{v.calls:,}", f"{v.usec_per_call:.1f}", f"{v.usec / 1000:.0f}"]
                         for k, v in top])


def markdown(targets: Sequence[Target], e2e: Sequence[E2EResult], headline: E2EResult,
             naive: NaiveResult, *,
             costs: Sequence[CostRow], lat: Sequence[LatencyResult], memory: Sequence[MemoryRow],
             machine: str) -> str:
    sections = [
        ["## Targets", "", *target_table(targets)],
        ["## End to end (producer -> Redis -> 2 Celery workers x 1 process)", "",
         *e2e_table(e2e, headline)],
        ["## Against the naive baseline", "", *naive_table(headline, naive)],
        ["## Commit cost per delta by thread length (Drainer in-process)", "",
         *cost_table(costs)],
        ["## Enqueue-to-visible latency (paced producer, poller process)", "",
         *latency_table(lat, headline)],
        ["## Redis memory per stored message", "", *memory_table(memory)],
        ["## Redis commandstats", "", *commands_table(headline.commands)],
        ["## Machine", "", machine],
    ]
    return report(sections)

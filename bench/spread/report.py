"""The spread benchmark's markdown report, rendered from its JSON (so a results file
can be rendered again)."""

from __future__ import annotations

from typing import Any

from bench.common.tables import rate, report, table, target_table
from bench.common.target import Target


def _us(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 else f"{value:.1f}"


def _client(data: dict[str, Any], sizes: dict[str, Any]) -> list[str]:
    c, shape = data["client"], sizes["client"]
    rows = []
    for i, r in enumerate(c["repeats"]):
        cpu = r["cpu_us_per_delta"]
        rows.append([str(i), f"{r['deltas']:,}", rate(r["rate"]), f"{r['wall_seconds']:.2f}",
                     *(_us(cpu[k]) for k in ("producer", "worker", "redis", "broker", "total")),
                     f"{r['commits_per_delta']:.2f}", "ok" if r["checked"] else "FAILED"])
    cpu = c["cpu_us_per_delta"]
    rows.append(["**median**", "", f"**{rate(c['rate'])}**", "",
                 *(_us(cpu[k]) for k in ("producer", "worker", "redis", "broker", "total")),
                 f"{c['commits_per_delta']:.2f}", ""])
    head = [f"## Spread shape through the Python client ({shape['threads']:,} threads x "
            f"{shape['per_thread']}, bulks of {shape['bulk']}, one delta of a thread a bulk; "
            "`Producer.enqueue_stream`; 2 Celery workers)", ""]
    return head + table(["repeat", "deltas", "deltas/s (Redis clock)", "wall s",
                         "producer µs/d", "workers µs/d", "state Redis µs/d", "broker µs/d",
                         "total µs/d", "commits/delta", "states"], rows)


def _lag(data: dict[str, Any]) -> list[str]:
    lag = data["client"]["lag"]
    row = [rate(lag["config"]["rate"]), rate(lag["achieved_rate"]), f"{lag['deltas']:,}",
           *(f"{lag[k]:,.1f}" for k in ("p50_ms", "p95_ms", "p99_ms", "max_ms")),
           f"{lag['mean_poll_ms']:.1f}", str(lag["unresolved"]), str(lag["tasks"]),
           "ok" if lag["check"]["ok"] else "FAILED"]
    head = [f"## Enqueue to visible at half the median spread rate (one delta a chosen "
            f"thread of {lag['config']['threads']:,}, a bulk a {lag['config']['tick'] * 1e3:g} "
            "ms tick)", ""]
    return head + table(["asked/s", "sent/s", "deltas", "p50 ms", "p95 ms", "p99 ms", "max ms",
                         "poll loop ms", "unresolved", "wake-up tasks", "states"], [row])


def _outside(data: dict[str, Any], sizes: dict[str, Any]) -> list[str]:
    o, shape = data["outside"], sizes["outside"]
    rows = []
    for r in o["rounds"]:
        h, b = r["http"], r["bare"]
        if not h["deltas"]:
            rows.append([r["round"], ", ".join(r["order"]), "refused", "", "", "", "", ""])
            continue
        cpu = h["cpu_us_per_delta"]
        rows.append([r["round"], ", ".join(r["order"]), rate(h["ingest_per_s"]),
                     rate(h["visible_per_s"]), rate(b["per_s"]), f"{r['ratio']:.3f}",
                     " / ".join(_us(cpu[k]) for k in ("senders", "api", "workers", "redis",
                                                     "broker")),
                     f"{h['others_cores']:.2f}"])
    m = o["median"]
    if m:
        cpu = m["http_cpu_us_per_delta"]
        rows.append(["**median**", "", rate(m["ingest_per_s"]), f"**{rate(m['visible_per_s'])}**",
                     rate(m["bare_per_s"]), f"**{m['ratio']:.3f}**",
                     " / ".join(_us(cpu[k]) for k in ("senders", "api", "workers", "redis",
                                                     "broker")), ""])
    head = [f"## From outside: HTTP bulk vs bare XADD ({shape['threads']:,} threads x "
            f"{shape['per_thread']}, `POST /deltas` of {shape['bulk']} one-message deltas, one "
            f"of a thread a bulk, {shape['senders']} client processes)", ""]
    return head + table(["round", "order", "HTTP ingest/s", "HTTP all visible/s",
                         "bare XADD/s", "ratio", "HTTP CPU µs/d: senders / API / workers / "
                         "Redis / broker", "others' cores"], rows)


def _notes(data: dict[str, Any]) -> list[str]:
    meta, failed = data["meta"], data["failed_checks"]
    checked = (f"all {len(data['checks'])} checks passed (every thread of every run equals "
               "the one-delta-at-a-time fold; every bare entry landed)" if not failed
               else f"{len(failed)} of {len(data['checks'])} FAILED: "
               + "; ".join(f"{c['name']}: {c['detail']}" for c in failed))
    bare = data["outside"]["median"].get("bare_redis_us_per_delta")
    return [
        "## Notes", "",
        "- Client rate: first enqueue to last commit on Redis's clock (as `bench.pipeline`'s "
        "end to end); µs/d: CPU per delta of each process (producer: this process's over "
        "the sends; workers: both Celery trees; Redis: `INFO cpu`).",
        "- Lag: from the return of the `enqueue_many` that carried a delta to the poll that "
        "saw its thread's cursor at its version (an upper bound by one poll loop).",
        "- Outside: all visible is from the first request to the last commit of the run's "
        "threads, once every thread applied all its deltas; ingest is to the last answer. "
        "Bare: the same deltas' JSON as stream entries, 500 `XADD` a pipeline, two "
        "processes, to throwaway keys deleted after. Ratio: the median of the rounds' "
        "ratios; the HTTP and bare runs of a round alternate their order. The senders' "
        "CPU is small by design: their bodies are encoded before the clock, the answers "
        "decoded after every thread is visible."
        + (f" Bare XADD costs Redis {bare:.1f} µs a delta." if bare is not None else ""),
        f"- Mode {meta['mode']}; {meta['cores']} cores, load average before / after "
        f"{meta['load_before_after']}; Redis {meta['redis']}; Python {meta['python']}; code "
        f"{meta['code']}; {meta['seconds']:.0f} s.",
        f"- State check: {checked}.",
    ]


def render(data: dict[str, Any]) -> str:
    sizes = data["meta"]["sizes"]
    judged = [Target(**t) for t in data["targets"]]
    head = ["## Targets (issue 24, items 2 and 3)", "", *target_table(judged)]
    return report([head, _client(data, sizes), _lag(data), _outside(data, sizes),
                   _notes(data)])

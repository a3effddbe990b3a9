"""The context results as markdown (the table of docs/benchmarks.md's section)."""

from __future__ import annotations

from typing import Any, Final

from bench.common.tables import table
from bench.context.targets import JUDGED

#: The figures of a read, as the table names them, in its order.
FIGURES: Final = {
    "client_cpu_us": "client CPU µs/read",
    "redis_cpu_us": "Redis CPU µs/read",
    "script_us": "CONTEXT script µs/call",
    "sent_bytes": "bytes Redis sent/read",
    "wall_ms_median": "wall ms/read",
}


def _number(figure: str, value: float) -> str:
    return f"{value:,.0f}" if figure == "sent_bytes" else f"{value:,.1f}"


def _mix(counts: dict[str, int]) -> str:
    return ", ".join(f"{n:,} {kind}" for kind, n in counts.items())


def render(data: dict[str, Any]) -> str:
    meta, summary, target = data["meta"], data["summary"], data["target"]
    sizes, budget = meta["sizes"], meta["budget"]
    short, long = f"{sizes['short']:,} msgs", f"{sizes['long']:,} msgs"
    tokens, mix = data["tokens"], data["mix"]
    lines = [f"Context read of a {budget:,}-token window: {short} ({tokens['short']:,} tokens) "
             f"vs {long} ({tokens['long']:,} tokens), {sizes['rounds']} rounds of "
             f"{sizes['reads']} reads a thread, alternated; medians of the rounds", ""]
    body = []
    for read, per in summary.items():
        for figure, label in FIGURES.items():
            f = per[figure]
            ratio = f"{f['ratio']:.2f}"
            body.append([read, label, _number(figure, f["short"]), _number(figure, f["long"]),
                         f"**{ratio}**" if figure in JUDGED else ratio])
    lines += table(["read", "figure", short, long, "long / short"], body)
    today, replies = data["today"], data["reply_bytes"]
    calls = {read: per["script_calls"]["long"] for read, per in summary.items()}
    phases = today["phases_ms"]
    fastest = min(per["wall_ms_median"]["long"] for per in summary.values())
    lines += [
        "",
        f"Mix: {_mix(mix['short'])} (short); {_mix(mix['long'])} (long). "
        f"Threads folded in {data['fills_seconds']['short']:.1f} s and "
        f"{data['fills_seconds']['long']:.1f} s.",
        f"One CONTEXT reply (RESP): {replies['short']:,} and {replies['long']:,} bytes; "
        "CONTEXT calls a read (long thread): "
        + "; ".join(f"{read}: {n:g}" for read, n in calls.items()) + ".",
        "",
        f"Today's way on the {sizes['long']:,}-message thread (the whole state read, "
        f"messages_from_dict, trim_messages; {today['times']} reads): "
        f"**{today['wall_ms']:,.0f} ms a read** ({today['client_cpu_us'] / 1e3:,.0f} ms "
        f"client CPU, {today['redis_cpu_us'] / 1e3:,.1f} ms Redis CPU, "
        f"{today['sent_bytes']:,.0f} bytes sent): the state read {phases['state']:,.0f} ms, "
        f"messages_from_dict {phases['convert']:,.0f} ms, trim_messages "
        f"{phases['trim']:,.0f} ms; {today['wall_ms'] / fastest:,.0f}x the context read's "
        "wall time.",
        "",
        f"Target {target['name']} {target['goal']}: {target['value']} "
        f"({'met' if target['passed'] else 'NOT met'}; {target['detail']}).",
    ]
    return "\n".join(lines)

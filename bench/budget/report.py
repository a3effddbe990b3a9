"""The budget's rows, their medians over the rounds, and the markdown report.

A row is a part's CPU per delta in a round beside its floor measured in the same round;
its ratio is the median of the rounds' ratios (a noisy round moves both sides of its
own ratio alike), its figures the medians, with the rounds' range beside them.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from typing import Any, Final

from bench.common.tables import rate, report, table

Round = dict[str, Any]
Figure = Callable[[Round], float]
DIRECT: Final = "direct"
HTTP: Final = "http"


def _cpu(part: str, process: str) -> Figure:
    return lambda r: float(r[part]["cpu_us_per_delta"][process])


def _floor(*keys: str) -> Figure:
    return lambda r: sum(float(r["floors"][k]) for k in keys)


def _none(r: Round) -> float:
    del r
    return 0.0


#: name, the part's µs per delta, its floor's (0: none: a wake-up has no floor's twin).
ROWS: Final[tuple[tuple[str, Figure, Figure], ...]] = (
    ("producer: `Client.append` (its process)", _cpu(DIRECT, "here"),
     _floor("encode_us", "write_client_us")),
    ("API: `POST /threads/{id}/deltas` (its process tree)", _cpu(HTTP, "api"),
     _floor("healthz_api_us")),
    ("state Redis (direct run)", _cpu(DIRECT, "redis"), _floor("write_redis_us")),
    ("workers (direct run)", _cpu(DIRECT, "workers"), _floor("decode_fold_us")),
    ("broker Redis (direct run)", _cpu(DIRECT, "broker"), _none),
    ("HTTP client: `HttpClient.append` (its process)", _cpu(HTTP, "here"),
     _floor("healthz_client_us")),
    ("state Redis (HTTP run)", _cpu(HTTP, "redis"), _floor("write_redis_us")),
    ("workers (HTTP run)", _cpu(HTTP, "workers"), _floor("decode_fold_us")),
    ("broker Redis (HTTP run)", _cpu(HTTP, "broker"), _none),
)
#: The totals: the rows (by position in ROWS) each path's delta passes through.
TOTALS: Final = (("total, direct path (producer, Redis, workers, broker)", (0, 2, 3, 4)),
                 ("total, HTTP path (client, API, Redis, workers, broker)", (5, 1, 6, 7, 8)))


def _stats(values: Sequence[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def _row(name: str, parts: Sequence[tuple[Figure, Figure]],
         rounds: Sequence[Round]) -> dict[str, Any]:
    values = [sum(v(r) for v, _ in parts) for r in rounds]
    floors = [sum(f(r) for _, f in parts) for r in rounds]
    ratios = [v / f for v, f in zip(values, floors, strict=True) if f > 0]
    return {"part": name, "cpu_us": _stats(values),
            "floor_us": statistics.median(floors) if any(floors) else None,
            "ratio": statistics.median(ratios) if ratios else None}


def _background(rounds: Sequence[Round], idle: dict[str, float], part: str) -> dict[str, float]:
    """The idle stack's CPU (ms/s) over each window, per delta: how much of a row is
    the background a window carries, whatever it sends (medians over the rounds)."""
    return {process: statistics.median(idle[process] * r[part]["settled_seconds"]
                                       / r[part]["deltas"] * 1e3 for r in rounds)
            for process in ("workers", "redis", "broker")}


def summarize(rounds: Sequence[Round], idle: dict[str, float]) -> dict[str, Any]:
    """Each row's and total's medians; each run's rates (deltas per wall second) and
    the idle background in its rows."""
    rows = [_row(name, [(v, f)], rounds) for name, v, f in ROWS]
    rows += [_row(name, [(ROWS[i][1], ROWS[i][2]) for i in picks], rounds)
             for name, picks in TOTALS]
    rates = {part: {k: statistics.median(r[part][k] for r in rounds)
                    for k in ("sent_per_s", "settled_per_s")} for part in (DIRECT, HTTP)}
    background = {part: _background(rounds, idle, part) for part in (DIRECT, HTTP)}
    return {"rows": rows, "rates": rates, "idle_us_per_delta": background}


def _cells(row: dict[str, Any]) -> list[str]:
    cpu, floor, ratio = row["cpu_us"], row["floor_us"], row["ratio"]
    name = f"**{row['part']}**" if row["part"].startswith("total") else row["part"]
    return [name, f"{cpu['median']:,.1f} ({cpu['min']:,.1f}-{cpu['max']:,.1f})",
            "-" if floor is None else f"{floor:,.1f}",
            "-" if ratio is None else f"{ratio:,.1f}x"]


def _notes(data: dict[str, Any]) -> list[str]:
    meta, summary = data["meta"], data["summary"]
    rates, background = summary["rates"], summary["idle_us_per_delta"]
    idle = ", ".join(f"{k} {v:.1f}" for k, v in data["idle"].items())
    carried = "; ".join(f"{part}: " + ", ".join(f"{k} {v:.1f}" for k, v in per.items())
                        for part, per in background.items())
    checked = ("every thread equals the one-at-a-time fold (a sample LangGraph's "
               "add_messages too)" if not data["failures"]
               else f"{len(data['failures'])} FAILED")
    return [
        f"- Deltas/s (median): direct {rate(rates[DIRECT]['sent_per_s'])} sent, "
        f"{rate(rates[DIRECT]['settled_per_s'])} to drained; HTTP "
        f"{rate(rates[HTTP]['sent_per_s'])} sent, {rate(rates[HTTP]['settled_per_s'])} "
        "to drained (one call at a time: a latency-bound rate, not a capacity).",
        f"- Idle stack, CPU ms/s: {idle}; that background's share of the rows, µs/delta: "
        f"{carried}. A drain poll costs Redis {data['poll_cost_us']:.0f} µs (subtracted).",
        "- Redis's and the workers' CPU per delta depend on the arrival rate: the slower "
        "the deltas come, the fewer a wake-up's task and drain round carry (so the HTTP "
        "run's rows differ from the direct run's).",
        f"- Load average before / after: {meta['load_before_after']}; {meta['cores']} "
        f"cores; code {meta['code']}; {meta['seconds']:.0f} s.",
        f"- State check: {checked}.",
    ]


def render(data: dict[str, Any]) -> str:
    meta, summary = data["meta"], data["summary"]
    sizes = meta["sizes"]
    deltas = sizes["threads"] * sizes["per_thread"]
    ops = ", ".join(f"{n:,} {op}s" for op, n in sorted(data["ops"].items()))
    head = [f"CPU per delta, spread shape: {deltas:,} one-message deltas a part a round "
            f"({sizes['threads']:,} threads x {sizes['per_thread']}, one call per delta, "
            f"threads in turn; {ops}), {sizes['rounds']} rounds, parts rotated; medians "
            "(the rounds' range), each floor measured in the same rounds", ""]
    budget = table(["part", "CPU per delta µs", "floor µs", "ratio to floor"],
                   [_cells(row) for row in summary["rows"]])
    return report([head + budget, _notes(data)])

"""Benchmark of a context read: what reading a model's window of a thread costs as the
thread grows, and what the same answer costs the way users get it today.

Run ``python -m bench.context [--quick] [--out PATH]``: prints a markdown report and
writes the results as JSON (``bench/results/context.json``). On one private
redis-server, two threads of the same mix (a system prompt, then turns of a question
and an answer, every fifth answer a tool call and its result; 60 tokens a message on
average), one of 100 messages and one of 100,000 (5,000 with ``--quick``), folded by a
drainer in this process. Then, in rounds that alternate which thread goes first:

* **the context read** (``Threads.context``: the CONTEXT script, the window, the
  messages rendered in LangChain's form) of a 4,000-token window, ``strategy="last"``
  alone and with ``include_system=True, start_on="human"``: per read, this process's
  CPU (the client side: decoding and trimming), Redis's CPU (``INFO cpu``) and the
  script's own time (``INFO commandstats``), the reply's bytes, and the wall time;
* **today's way**, on the long thread, a few times: the whole state read
  (``Threads.state``) and ``trim_messages`` of langchain-core on it.

The target: the long thread's read costs at most 2x the short one's, in client CPU and
in Redis CPU (medians of the rounds' ratios). Each run is checked: each window equals
the one the whole state gives (and, for the short thread, LangChain's ``trim_messages``
of it), and every record's count is right (``layout_problems``). A wrong run fails.
"""

from __future__ import annotations

import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Final

import redis
from langchain_core.messages import messages_from_dict, trim_messages

from bench.common import cli, services
from bench.common.cpu import redis_cpu
from bench.common.machine import load_average, redis_version
from bench.common.store import NullWaker, in_process_settings, store_for
from bench.common.tables import table
from threadfold.core.context import Span, sized, window
from threadfold.workers.ingest.producer import Producer
from threadfold.workers.redisio.client import run
from threadfold.workers.runtime.drain import Drainer
from threadfold.workers.storage import context as context_script
from threadfold.workers.storage.layout import layout_problems
from threadfold.workers.storage.store import Store
from threadfold.workers.threads import query
from threadfold.workers.threads.service import Threads

Progress = Callable[[str], None]
BUDGET = 4_000
APPROXIMATE: Final = "approximate"
#: The reads measured: a name and the trim's arguments.
READS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("last", {}),
    ("last, system kept, start on human", {"include_system": True, "start_on": "human"}),
)


@dataclass(frozen=True)
class Failure:
    name: str
    detail: str


@dataclass(frozen=True)
class Sizes:
    short: int
    long: int
    rounds: int
    reads: int  # per thread per round
    today: int  # whole-state reads + trim_messages of the long thread


FULL = Sizes(100, 100_000, 9, 200, 3)
QUICK = Sizes(100, 5_000, 3, 40, 1)


def _turns(n: int, seed: int) -> list[dict[str, Any]]:
    """``n`` messages of the mix, a system prompt first."""
    rnd = random.Random(seed)
    out: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a careful assistant. " * 6, "id": "sys"}
    ]
    turn = 0
    while len(out) < n:
        out.append({"role": "user", "content": "word " * rnd.randrange(10, 60), "id": f"h{turn}"})
        if turn % 5 == 4:
            call = f"call{turn}"
            out.append({"role": "assistant", "content": "", "id": f"c{turn}", "tool_calls": [
                {"id": call, "type": "function",
                 "function": {"name": "search", "arguments": f'{{"q": "{turn}"}}'}}]})
            out.append({"role": "tool", "content": "result " * rnd.randrange(20, 80),
                        "tool_call_id": call, "id": f"t{turn}"})
        out.append({"role": "assistant", "content": "answer " * rnd.randrange(20, 70),
                    "id": f"a{turn}"})
        turn += 1
    return out[:n]


def _fill(store: Store, producer: Producer, drainer: Drainer, thread: str, n: int) -> float:
    started = time.perf_counter()
    messages = _turns(n, seed=n)
    for at in range(0, n, 500):
        producer.enqueue(thread, messages[at : at + 500])
        drainer.drain(f"_/{thread}")
    while drainer.drain(f"_/{thread}").handed_off:  # a drain's time budget ran out
        pass
    return time.perf_counter() - started


def _tokens(store: Store, thread: str) -> int:
    whole = store.read_state(f"_/{thread}")
    assert whole is not None
    return sum(s.tokens for s in sized(whole.messages))


def _reply_bytes(store: Store, ref: str, want: int) -> int:
    raw = run(store.client, context_script.call(store.keyspace.thread(ref), "last", want))
    return sum(len(v) if isinstance(v, bytes | str) else 8 for v in raw)


def _measure_reads(threads: Threads, admin: redis.Redis, thread: str,
                   asked: query.ContextQuery, reads: int) -> dict[str, float]:
    services.reset_stats(admin)
    redis_before, cpu_before = redis_cpu(admin), time.process_time()
    wall: list[float] = []
    for _ in range(reads):
        started = time.perf_counter()
        threads.context("_", thread, asked)
        wall.append(time.perf_counter() - started)
    cpu = time.process_time() - cpu_before
    redis_used = redis_cpu(admin) - redis_before
    stats = services.commandstats(admin)
    script = stats.get("evalsha") or stats.get("eval")
    return {
        "client_cpu_us": cpu / reads * 1e6,
        "redis_cpu_us": redis_used / reads * 1e6,
        "script_us": script.usec_per_call if script else 0.0,
        "wall_ms_median": statistics.median(wall) * 1e3,
    }


def _check(threads: Threads, store: Store, thread: str, n: int) -> list[Failure]:
    failures = [Failure(f"layout {thread}", p) for p in layout_problems(store, f"_/{thread}")]
    whole = store.read_state(f"_/{thread}")
    assert whole is not None
    lc = None
    if n <= 1_000:
        dumped = threads.state("_", thread, query.query()).messages
        lc = messages_from_dict([{"type": m["type"], "data": m} for m in dumped])
    for name, trim in READS:
        asked = query.context(max_tokens=BUDGET, **trim)
        got = [m["id"] for m in threads.context("_", thread, asked).messages]
        expected = [i.message.id for i in window(Span(sized(whole.messages)), asked.trim).items]
        if got != expected:
            failures.append(Failure(f"{thread} {name}", "the read's window is not the state's"))
        if lc is not None:
            theirs = trim_messages(lc, max_tokens=BUDGET, token_counter=APPROXIMATE,
                                   include_system=bool(trim.get("include_system")),
                                   start_on=trim.get("start_on"))
            if got != [m.id for m in theirs]:
                failures.append(Failure(f"{thread} {name}", "not LangChain's trim_messages"))
    return failures


def _today(threads: Threads, admin: redis.Redis, thread: str, times: int) -> dict[str, float]:
    """The whole state read, then LangChain's trim_messages on it (what users do now)."""
    redis_before, cpu_before = redis_cpu(admin), time.process_time()
    started = time.perf_counter()
    for _ in range(times):
        dumped = threads.state("_", thread, query.query()).messages
        lc = messages_from_dict([{"type": m["type"], "data": m} for m in dumped])
        trim_messages(lc, max_tokens=BUDGET, token_counter=APPROXIMATE)
    return {
        "client_cpu_us": (time.process_time() - cpu_before) / times * 1e6,
        "redis_cpu_us": (redis_cpu(admin) - redis_before) / times * 1e6,
        "wall_ms": (time.perf_counter() - started) / times * 1e3,
    }


def measure(sizes: Sizes, say: Progress) -> dict[str, Any]:
    with services.redis_server() as server:
        settings = in_process_settings(server.url)
        store = store_for(settings)
        producer = Producer(store.client, settings, NullWaker())
        drainer = Drainer(store, settings)
        threads = Threads(settings, producer, store)
        admin = redis.Redis.from_url(server.url)
        fills = {}
        for name, n in (("short", sizes.short), ("long", sizes.long)):
            fills[name] = _fill(store, producer, drainer, name, n)
            say(f"{name}: {n:,} messages folded in {fills[name]:.1f} s")
        totals = {name: _tokens(store, name) for name in ("short", "long")}
        failures = _check(threads, store, "short", sizes.short)
        failures += _check(threads, store, "long", sizes.long)
        rounds: list[dict[str, Any]] = []
        for r in range(sizes.rounds):
            order = ("short", "long") if r % 2 == 0 else ("long", "short")
            turn: dict[str, Any] = {"order": order}
            for read, trim in READS:
                asked = query.context(max_tokens=BUDGET, **trim)
                turn[read] = {t: _measure_reads(threads, admin, t, asked, sizes.reads)
                              for t in order}
            rounds.append(turn)
            say(f"round {r}: " + ", ".join(
                f"{read}: {turn[read]['long']['client_cpu_us']:.0f} / "
                f"{turn[read]['short']['client_cpu_us']:.0f} us" for read, _ in READS))
        today = _today(threads, admin, "long", sizes.today)
        say(f"today's way on the long thread: {today['wall_ms']:.0f} ms a read")
        replies = {t: _reply_bytes(store, f"_/{t}", BUDGET) for t in ("short", "long")}
        store.client.close()
        admin.close()
    return {"fills_seconds": fills, "tokens": totals, "rounds": rounds, "today": today,
            "reply_bytes": replies, "failures": [asdict(f) for f in failures]}


def summarize(data: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for read, _ in READS:
        per = {}
        for figure in ("client_cpu_us", "redis_cpu_us", "script_us", "wall_ms_median"):
            short = [r[read]["short"][figure] for r in data["rounds"]]
            long = [r[read]["long"][figure] for r in data["rounds"]]
            ratios = [b / a for a, b in zip(short, long, strict=True) if a > 0]
            per[figure] = {"short": statistics.median(short), "long": statistics.median(long),
                           "ratio": statistics.median(ratios) if ratios else 0.0}
        out[read] = per
    return out


def judge(summary: dict[str, Any]) -> dict[str, Any]:
    worst = max(max(s["client_cpu_us"]["ratio"], s["redis_cpu_us"]["ratio"])
                for s in summary.values())
    return {"name": "long thread's read / short thread's read (client CPU, Redis CPU)",
            "goal": "<= 2x", "value": round(worst, 3), "passed": worst <= 2.0}


def render(data: dict[str, Any], sizes: Sizes) -> str:
    summary, target = data["summary"], data["target"]
    lines = [f"Context read of a {BUDGET:,}-token window: {sizes.short:,} vs {sizes.long:,} "
             f"messages ({data['tokens']['short']:,} and {data['tokens']['long']:,} tokens), "
             f"{sizes.rounds} rounds of {sizes.reads} reads, medians", ""]
    head = ["read", "figure", f"{sizes.short:,} msgs", f"{sizes.long:,} msgs", "ratio"]
    body = []
    names = {"client_cpu_us": "client CPU µs/read", "redis_cpu_us": "Redis CPU µs/read",
             "script_us": "CONTEXT script µs/call", "wall_ms_median": "wall ms/read"}
    for read, per in summary.items():
        for figure, label in names.items():
            f = per[figure]
            body.append([read, label, f"{f['short']:,.1f}", f"{f['long']:,.1f}",
                         f"**{f['ratio']:.2f}**" if figure in ("client_cpu_us", "redis_cpu_us")
                         else f"{f['ratio']:.2f}"])
    lines += table(head, body)
    today = data["today"]
    lines += ["", f"Reply bytes: {data['reply_bytes']['short']:,} and "
              f"{data['reply_bytes']['long']:,}. Today's way on the {sizes.long:,}-message "
              f"thread (whole state read + trim_messages): {today['client_cpu_us'] / 1e3:,.0f} ms "
              f"client CPU, {today['redis_cpu_us'] / 1e3:,.1f} ms Redis CPU, "
              f"{today['wall_ms']:,.0f} ms a read.", "",
              f"Target {target['name']} {target['goal']}: {target['value']} "
              f"({'met' if target['passed'] else 'NOT met'})."]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = cli.parser("context", __doc__, "100 vs 5,000 messages, 3 rounds: about 30 s")
    args = parser.parse_args(argv)
    mode, sizes = cli.sizes(args, FULL, QUICK)
    started = time.perf_counter()
    data = measure(sizes, cli.progress(started))
    data["summary"] = summarize(data)
    data["target"] = judge(data["summary"])
    data["meta"] = {"mode": mode, "sizes": asdict(sizes), "seconds": time.perf_counter() - started,
                    "load_before_after": load_average(), "cores": os.cpu_count(),
                    "python": sys.version.split()[0], "platform": platform.platform(),
                    "redis": redis_version()}
    failed = [Failure(f["name"], f["detail"]) for f in data["failures"]]
    return cli.finish(cli.out_path("context", args), data, render(data, sizes), failed)

"""Benchmark of a context read: what reading a model's window of a thread costs as the
thread grows, and what the same answer costs the way users get it today.

Run ``python -m bench.context [--quick] [--out PATH]``: prints a markdown report and
writes the results as JSON (``bench/results/context.json``). On one private
redis-server, two threads of the same mix (a system prompt, then turns of a question
and an answer, every fifth answer a tool call and its result; about 65 tokens a
message, so the short thread is past the budget too and both reads are full windows),
one of 100 messages and one of 100,000 (5,000 with ``--quick``), folded by a drainer
in this process. Then, in rounds that alternate which thread goes first:

* **the context read** (``Threads.context``: the CONTEXT script, the window, the
  messages rendered in LangChain's form) of a 4,000-token window, ``strategy="last"``
  alone and with ``include_system=True, start_on="human"``: per read, this process's
  CPU (``time.process_time``: the client side, decoding and trimming), Redis's CPU
  (``INFO cpu``) and the script's own time (``INFO commandstats``), the bytes Redis
  sent (``INFO stats``' ``total_net_output_bytes``, less its own reply), and the wall
  time (the median read);
* **today's way**, on the long thread, a few times: the whole state read
  (``Threads.state``), ``messages_from_dict`` and ``trim_messages`` of langchain-core.

The target (:mod:`bench.context.targets`): the long thread's read costs at most 2x the
short one's, in client CPU and in Redis CPU (medians of the rounds' ratios). Each run is
checked: each window equals the one the whole state gives (and, for the short thread,
LangChain's ``trim_messages`` of it), and every record's count is right
(``layout_problems``). A wrong run fails.
"""

from __future__ import annotations

import itertools
import random
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Final

import msgspec
import redis
from langchain_core.messages import messages_from_dict, trim_messages

from bench.common import cli, services
from bench.common.cpu import redis_cpu
from bench.common.machine import code_measured, load_average, run_facts
from bench.common.store import NullWaker, in_process_settings, store_for
from bench.context.report import FIGURES, render
from bench.context.targets import judge
from threadfold.core.context import Span, sized, window
from threadfold.workers.ingest.producer import Producer
from threadfold.workers.redisio.client import run
from threadfold.workers.runtime.drain import Drainer
from threadfold.workers.storage import context as context_script
from threadfold.workers.storage.layout import layout_problems
from threadfold.workers.storage.store import Store
from threadfold.workers.threads import operations as ops
from threadfold.workers.threads import query
from threadfold.workers.threads.service import Threads

Progress = Callable[[str], None]
BUDGET: Final = 4_000
APPROXIMATE: Final = "approximate"
THREADS: Final = ("short", "long")
#: Messages a delta when filling (a drain after each).
BULK: Final = 500
#: The reads measured: a name and the trim's arguments.
READS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("last", {}),
    ("last, system kept, start on human", {"include_system": True, "start_on": "human"}),
)


@dataclass(frozen=True)
class Failure:
    """A check that failed, as cli.finish lists it."""

    name: str
    detail: str


@dataclass(frozen=True)
class Sizes:
    short: int
    long: int
    rounds: int
    reads: int  # per thread per read shape per round
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


def _fill(producer: Producer, drainer: Drainer, thread: str, n: int) -> float:
    started = time.perf_counter()
    messages = _turns(n, seed=n)
    for at in range(0, n, BULK):
        producer.enqueue(thread, messages[at : at + BULK])
        drainer.drain(f"_/{thread}")
    while drainer.drain(f"_/{thread}").handed_off:  # a drain's time budget ran out
        pass
    return time.perf_counter() - started


def _totals(store: Store, thread: str) -> tuple[int, dict[str, int]]:
    """The thread's tokens (the sum of its messages' counts) and its messages by type."""
    whole = store.read_state(f"_/{thread}")
    assert whole is not None
    mix = Counter(m.type for m in whole.messages)
    return sum(s.tokens for s in sized(whole.messages)), dict(mix.most_common())


def _resp_bytes(value: Any) -> int:
    """The RESP2 size of a reply as redis-py parsed it (a script's: bulk strings,
    integers, arrays)."""
    if isinstance(value, list):
        return len(f"*{len(value)}\r\n") + sum(_resp_bytes(v) for v in value)
    if isinstance(value, int):
        return len(f":{value}\r\n")
    data = value.encode() if isinstance(value, str) else bytes(value)
    return len(f"${len(data)}\r\n") + len(data) + 2


def _reply_bytes(store: Store, thread: str) -> int:
    """One CONTEXT reply's size, as a 4,000-token window of ``thread`` asks for it."""
    call = context_script.call(store.keyspace.thread(f"_/{thread}"), "last", BUDGET)
    return _resp_bytes(run(store.client, call))


def _sent(admin: redis.Redis) -> int:
    """The bytes the server has sent its clients (since the last CONFIG RESETSTAT)."""
    return int(admin.info("stats")["total_net_output_bytes"])


def _info_reply(admin: redis.Redis) -> float:
    """What one ``INFO stats`` reply adds to the count it reads (the count is taken
    before the reply is sent): to subtract from a count over reads."""
    seen = [_sent(admin) for _ in range(6)]
    return statistics.median(b - a for a, b in itertools.pairwise(seen))


def _measure_reads(threads: Threads, admin: redis.Redis, thread: str,
                   asked: ops.ReadContext, reads: int, *,
                   info_reply: float) -> dict[str, float]:
    services.reset_stats(admin)
    redis_before = redis_cpu(admin)
    cpu_before = time.process_time()
    sent_before = _sent(admin)
    wall: list[float] = []
    for _ in range(reads):
        started = time.perf_counter()
        threads.context("_", msgspec.structs.replace(asked, thread_id=thread))
        wall.append(time.perf_counter() - started)
    sent = _sent(admin) - sent_before - info_reply
    cpu = time.process_time() - cpu_before
    redis_used = redis_cpu(admin) - redis_before
    stats = services.commandstats(admin)
    scripts = [s for name, s in stats.items() if name in ("evalsha", "eval")]
    calls = sum(s.calls for s in scripts)
    return {
        "client_cpu_us": cpu / reads * 1e6,
        "redis_cpu_us": redis_used / reads * 1e6,
        "script_us": sum(s.usec for s in scripts) / calls if calls else 0.0,
        "script_calls": calls / reads,
        "sent_bytes": sent / reads,
        "wall_ms_median": statistics.median(wall) * 1e3,
    }


def _check(threads: Threads, store: Store, thread: str, n: int) -> list[Failure]:
    failures = [Failure(f"layout {thread}", p) for p in layout_problems(store, f"_/{thread}")]
    whole = store.read_state(f"_/{thread}")
    assert whole is not None
    if len(whole.messages) != n:
        failures.append(Failure(f"{thread} fill", f"{len(whole.messages)} messages, not {n}"))
    lc = None
    if n <= 1_000:
        dumped = threads.state("_", ops.ReadState(thread_id=thread)).messages
        lc = messages_from_dict([{"type": m["type"], "data": m} for m in dumped])
    for name, trim in READS:
        asked = ops.ReadContext(thread_id=thread, max_tokens=BUDGET, **trim)
        got = [m["id"] for m in threads.context("_", asked).messages]
        trimmed = asked.checked(query.NO_LIMITS).trim
        expected = [i.message.id for i in window(Span(sized(whole.messages)), trimmed).items]
        if got != expected:
            failures.append(Failure(f"{thread} {name}", "the read's window is not the state's"))
        if lc is not None:
            theirs = trim_messages(lc, max_tokens=BUDGET, token_counter=APPROXIMATE,
                                   include_system=bool(trim.get("include_system")),
                                   start_on=trim.get("start_on"))
            if got != [m.id for m in theirs]:
                failures.append(Failure(f"{thread} {name}", "not LangChain's trim_messages"))
    return failures


def _today(threads: Threads, admin: redis.Redis, thread: str, times: int, *,
           info_reply: float) -> dict[str, Any]:
    """The whole state read, then LangChain's trim_messages on it (what users do now)."""
    phases = dict.fromkeys(("state", "convert", "trim"), 0.0)
    services.reset_stats(admin)
    redis_before, cpu_before = redis_cpu(admin), time.process_time()
    sent_before = _sent(admin)
    started = time.perf_counter()
    for _ in range(times):
        at = time.perf_counter()
        dumped = threads.state("_", ops.ReadState(thread_id=thread)).messages
        phases["state"] += time.perf_counter() - at
        at = time.perf_counter()
        lc = messages_from_dict([{"type": m["type"], "data": m} for m in dumped])
        phases["convert"] += time.perf_counter() - at
        at = time.perf_counter()
        trim_messages(lc, max_tokens=BUDGET, token_counter=APPROXIMATE)
        phases["trim"] += time.perf_counter() - at
    wall = time.perf_counter() - started
    sent = _sent(admin) - sent_before - info_reply
    return {
        "times": times,
        "client_cpu_us": (time.process_time() - cpu_before) / times * 1e6,
        "redis_cpu_us": (redis_cpu(admin) - redis_before) / times * 1e6,
        "sent_bytes": sent / times,
        "wall_ms": wall / times * 1e3,
        "phases_ms": {name: s / times * 1e3 for name, s in phases.items()},
    }


def measure(sizes: Sizes, say: Progress) -> dict[str, Any]:
    with services.redis_server() as server:
        settings = in_process_settings(server.url)
        store = store_for(settings)
        producer = Producer(store.client, settings, NullWaker())
        drainer = Drainer(store, settings)
        threads = Threads(settings, producer, store)
        admin = redis.Redis.from_url(server.url)
        counts = {"short": sizes.short, "long": sizes.long}
        fills = {}
        for name in THREADS:
            fills[name] = _fill(producer, drainer, name, counts[name])
            say(f"{name}: {counts[name]:,} messages folded in {fills[name]:.1f} s")
        totals = {name: _totals(store, name) for name in THREADS}
        say("tokens: " + ", ".join(f"{name} {t:,}" for name, (t, _) in totals.items()))
        failures = [f for name in THREADS for f in _check(threads, store, name, counts[name])]
        info_reply = _info_reply(admin)
        rounds: list[dict[str, Any]] = []
        for r in range(sizes.rounds):
            order = THREADS if r % 2 == 0 else THREADS[::-1]
            turn: dict[str, Any] = {"order": order}
            for read, trim in READS:
                asked = ops.ReadContext(thread_id="", max_tokens=BUDGET, **trim)
                turn[read] = {t: _measure_reads(threads, admin, t, asked, sizes.reads,
                                                info_reply=info_reply) for t in order}
            rounds.append(turn)
            say(f"round {r}: client CPU µs long / short: " + ", ".join(
                f"{read}: {turn[read]['long']['client_cpu_us']:.0f} / "
                f"{turn[read]['short']['client_cpu_us']:.0f}" for read, _ in READS))
        today = _today(threads, admin, "long", sizes.today, info_reply=info_reply)
        say(f"today's way on the long thread: {today['wall_ms']:.0f} ms a read")
        replies = {t: _reply_bytes(store, t) for t in THREADS}
        store.client.close()
        admin.close()
    return {"fills_seconds": fills, "tokens": {n: t for n, (t, _) in totals.items()},
            "mix": {n: mix for n, (_, mix) in totals.items()}, "rounds": rounds,
            "today": today, "reply_bytes": replies, "info_reply_bytes": info_reply,
            "failures": [asdict(f) for f in failures]}


def summarize(data: dict[str, Any]) -> dict[str, Any]:
    """Per read shape and figure: the short and long thread's medians over the rounds,
    and the median of the rounds' long / short ratios."""
    out: dict[str, Any] = {}
    for read, _ in READS:
        per = {}
        for figure in (*FIGURES, "script_calls"):
            short = [r[read]["short"][figure] for r in data["rounds"]]
            long = [r[read]["long"][figure] for r in data["rounds"]]
            ratios = [b / a for a, b in zip(short, long, strict=True) if a > 0]
            per[figure] = {"short": statistics.median(short), "long": statistics.median(long),
                           "ratio": statistics.median(ratios) if ratios else 0.0}
        out[read] = per
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = cli.parser("context", __doc__, "100 vs 5,000 messages, 3 rounds: a few seconds")
    args = parser.parse_args(argv)
    mode, sizes = cli.sizes(args, FULL, QUICK)
    started = time.perf_counter()
    before, code = load_average(), code_measured()
    data = measure(sizes, cli.progress(started))
    data["summary"] = summarize(data)
    data["target"] = judge(data["summary"])
    data["meta"] = {"mode": mode, "sizes": asdict(sizes), "budget": BUDGET, "bulk": BULK,
                    "reads": dict(READS), **run_facts(started, before, code)}
    failed = [Failure(f["name"], f["detail"]) for f in data["failures"]]
    return cli.finish(cli.out_path("context", args), data, render(data), failed)


if __name__ == "__main__":
    sys.exit(main())

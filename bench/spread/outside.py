"""Item 3's outside ratio: the HTTP bulk path's rate to all visible, beside redis-py's
bare pipelined ``XADD`` of the same payloads to the same Redis, in alternated rounds.

Seen from outside, the service is worth what a client gets from it end to end: deltas
sent over HTTP and readable, at their last version, on every thread. The bare ``XADD``
is what the same client processes get from the same Redis doing the least a log
could do with the same bytes (no validation, no fold, no wake-up, no state): a ceiling
measured on this machine in the same minutes, so the ratio of the two says what the
service keeps of the machine, where an absolute rate would mostly say how busy the
machine was.

* **HTTP**: the senders (:mod:`bench.spread.senders`) post their bulks; the run is
  timed from the first request to the last commit of the run's threads (meta ``t``,
  on Redis's clock, which is this machine's), once every thread has applied all its
  deltas (meta ``k``, polled every 20 ms by :func:`bench.pipeline.e2e.wait_applied`
  once the senders are done, so the polls do not slow the sending). The ingest rate
  is to the senders' last answer. CPU of every process of the stack over the run is
  reported beside (the polls' Redis time included). Every thread is then checked
  against the one-delta-at-a-time fold of what the API promised
  (:func:`bench.pipeline.e2e.verify`).
* **bare**: the same bulks' deltas as stream entries to fresh keys of a throwaway
  prefix, a pipeline per bulk, timed from the first pipeline to the last answer; the
  entries are counted (every one landed) and the keys deleted after, off the clock.

Each round runs both on threads of its own, the order alternated from round to round
(the machine is shared: a burst of load elsewhere hits both alike over the rounds);
the ratio is the median of the rounds' ratios, each from two runs seconds apart.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from bench.budget.parts import settle
from bench.common.checks import Check
from bench.common.cpu import redis_cpu
from bench.common.stack import Stack
from bench.pipeline.e2e import last_commit_ms, verify, wait_applied
from bench.pipeline.workload import ref_of, thread_id
from bench.spread.senders import (
    BareJob,
    HttpJob,
    Report,
    bare_sender,
    http_sender,
    shares,
    started,
)
from threadfold.testing import Ledger
from threadfold.workers.storage.store import Store

Progress = Callable[[str], None]
HTTP: Final = "http"
BARE: Final = "bare"
#: The API process the HTTP runs post to (bench.common.stack names it by its workers).
API: Final = "api1"


@dataclass(frozen=True)
class Shape:
    """``threads`` x ``per_thread`` one-message deltas a run, in bulks of ``bulk`` (one
    delta per thread a bulk), sent by ``senders`` processes."""

    threads: int
    per_thread: int
    bulk: int
    senders: int

    @property
    def deltas(self) -> int:
        return self.threads * self.per_thread


def _span(reports: Sequence[Report]) -> tuple[float, float]:
    """The first request's start and the last answer's end over the senders."""
    return min(r.first for r in reports), max(r.end for r in reports)


def _merged(promised: Sequence[Ledger]) -> Ledger:
    """The senders' promises as one (each sender's threads are its own)."""
    sent = Ledger()
    for part in promised:
        sent.merge(part)
    return sent


def http_run(stack: Stack, store: Store, shape: Shape, *, seed: int,
             prefix: str) -> tuple[dict[str, Any], list[Check]]:
    """One HTTP run on threads of ``prefix``: its figures and its checks."""
    settle(stack)  # no drain or wake-up of the run before still going
    jobs = [HttpJob(s, prefix, stack.apis[API].url)
            for s in shares(shape.threads, shape.per_thread, shape.bulk, shape.senders, seed)]
    # Every thread of the run gets per_thread deltas: known before any answer is read.
    counts = {ref_of(thread_id(t, prefix)): shape.per_thread for t in range(shape.threads)}
    with started(http_sender, jobs) as senders:
        before = stack.cpu()
        reports = senders.go()
        if refused := sum(r.refused for r in reports):
            refusal = next(r.refusal for r in reports if r.refused)
            return {"deltas": 0, "refused": refused}, [
                Check(f"{prefix}: POST /deltas", False, f"{refused} answers not 202: {refusal}")]
        wait_applied(stack.client, stack.settings, counts, stack.workers)
        polled = time.time()
        visible = last_commit_ms(stack.client, stack.settings, list(counts)) / 1000
        used = stack.cpu().minus(before)
        sent = _merged(senders.promised())
    first, answered = _span(reports)
    deltas = sum(r.deltas for r in reports)
    cpu = {"senders": sum(r.cpu for r in reports), "api": used.apis[API],
           "workers": used.workers, "redis": used.redis, "broker": used.broker,
           "beat": used.beat}
    figures = {
        "deltas": deltas, "refused": 0, "threads": len(counts),
        "send_seconds": answered - first, "visible_seconds": visible - first,
        "polled_seconds": polled - first,
        "ingest_per_s": deltas / (answered - first),
        "visible_per_s": deltas / max(visible - first, 1e-3),
        "cpu_us_per_delta": {k: v / deltas * 1e6 for k, v in cpu.items()},
        "others_cores": used.others(cpu["senders"]),
    }
    fold = verify(store, stack.settings, sent)
    return figures, [Check(f"{prefix}: {fold.name}", fold.ok, fold.detail),
                     Check(f"{prefix}: every delta promised", sent.count == shape.deltas,
                           f"{sent.count:,} of {shape.deltas:,}")]


def bare_run(stack: Stack, shape: Shape, *, seed: int, prefix: str,
             keys: str) -> tuple[dict[str, Any], list[Check]]:
    """The same bulks bare, to ``keys``-prefixed streams; counted, then deleted."""
    settle(stack)
    url = stack.settings.redis_url.get_secret_value()
    jobs = [BareJob(s, prefix, url, keys)
            for s in shares(shape.threads, shape.per_thread, shape.bulk, shape.senders, seed)]
    with started(bare_sender, jobs) as senders:
        before = redis_cpu(stack.client)
        reports = senders.go()
        used = redis_cpu(stack.client) - before
        senders.promised()  # nothing to say: let them end
    first, answered = _span(reports)
    deltas = sum(r.deltas for r in reports)
    landed = _count_and_delete(stack, keys)
    figures = {"deltas": deltas, "seconds": answered - first,
               "per_s": deltas / (answered - first),
               "cpu_us_per_delta": {"senders": sum(r.cpu for r in reports) / deltas * 1e6,
                                    "redis": used / deltas * 1e6}}
    check = Check(f"{keys}: every bare XADD landed", landed == deltas == shape.deltas,
                  f"{landed:,} entries for {deltas:,} sent, {shape.deltas:,} planned")
    return figures, [check]


def _count_and_delete(stack: Stack, keys: str) -> int:
    """The entries under the throwaway prefix, then the keys gone (off the clock)."""
    names = list(stack.client.scan_iter(match=f"{keys}*", count=1000))
    pipe = stack.client.pipeline(transaction=False)
    for name in names:
        pipe.xlen(name)
    landed = sum(int(n) for n in pipe.execute())
    for at in range(0, len(names), 1000):
        stack.client.delete(*names[at : at + 1000])
    return landed


def one_round(stack: Stack, store: Store, shape: Shape, r: int,
              label: str) -> tuple[dict[str, Any], list[Check]]:
    """Both runs of a round, on the same planned deltas (seed), order alternated."""
    order = [HTTP, BARE] if r % 2 == 0 else [BARE, HTTP]
    out: dict[str, Any] = {"round": label, "order": order}
    checks: list[Check] = []
    for part in order:
        if part == HTTP:
            out[HTTP], found = http_run(stack, store, shape, seed=r + 1, prefix=f"{label}-http")
        else:
            out[BARE], found = bare_run(stack, shape, seed=r + 1, prefix=f"{label}-http",
                                        keys=f"spread-bare:{label}:")
        checks += found
    ok = out[HTTP]["deltas"] and out[BARE]["per_s"]
    out["ratio"] = out[HTTP]["visible_per_s"] / out[BARE]["per_s"] if ok else 0.0
    return out, checks


def rounds(stack: Stack, store: Store, shape: Shape, count: int,
           say: Progress) -> tuple[dict[str, Any], list[Check]]:
    """``count`` rounds: each round's figures and their medians; every check."""
    done, checks = [], []
    for r in range(count):
        result, found = one_round(stack, store, shape, r, f"r{r}")
        done.append(result)
        checks += found
        if result[HTTP]["deltas"]:
            say(f"outside r{r} ({', '.join(result['order'])}): HTTP "
                f"{result[HTTP]['visible_per_s']:,.0f}/s all visible "
                f"({result[HTTP]['ingest_per_s']:,.0f}/s ingest), bare XADD "
                f"{result[BARE]['per_s']:,.0f}/s, ratio {result['ratio']:.3f}")
    return {"rounds": done, "median": summarize(done)}, checks


def summarize(done: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Medians over the rounds (the ratio: of the rounds' ratios) and the ratios' range."""
    ok = [r for r in done if r[HTTP]["deltas"]]
    if not ok:
        return {}

    def med(part: str, key: str) -> float:
        return float(statistics.median(r[part][key] for r in ok))

    cpu = {k: statistics.median(r[HTTP]["cpu_us_per_delta"][k] for r in ok)
           for k in ok[0][HTTP]["cpu_us_per_delta"]}
    ratios = [r["ratio"] for r in ok]
    return {"visible_per_s": med(HTTP, "visible_per_s"), "ingest_per_s": med(HTTP, "ingest_per_s"),
            "bare_per_s": med(BARE, "per_s"), "ratio": statistics.median(ratios),
            "ratio_min": min(ratios), "ratio_max": max(ratios), "http_cpu_us_per_delta": cpu,
            "bare_redis_us_per_delta": statistics.median(
                r[BARE]["cpu_us_per_delta"]["redis"] for r in ok)}

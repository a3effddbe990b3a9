"""The outside run's senders: processes of their own that send a share of the bulks,
through the API (``POST /deltas``) or bare to the state Redis (pipelined ``XADD``).

Two processes, because one Python client is itself a bottleneck on this machine (its
JSON, its socket, the GIL): the question is what the service takes, not what one
client can send. Each process owns every ``senders``-th thread
(:func:`bench.peer.workload.mine`) and sends only those threads' deltas, one request
(or one pipeline) at a time: a thread's deltas then arrive in the order planned. The
order matters: the mix's updates and removes target ids of the thread's earlier
appends, and two processes sharing a thread could let a remove overtake the append
of its message.

A share's bulks are the spread shape: every bulk carries one delta of each of
``bulk`` different threads (:func:`bench.pipeline.workload.schedule` with ``run=1``
over the sender's threads, a multiple of ``bulk``). Everything a sender sends is made
from the seed before the clock starts, in the sender (a batch job has its deltas
ready; nothing big crosses a pipe before the run): the HTTP bodies as bytes, and for
the bare run each delta's own JSON, the very bytes it takes in the body, as a stream
entry's value. After the run each sender reports its first request's start and its
last answer's end (this machine's wall clock, shared by the processes and Redis's
``TIME``), its CPU, and, from the API's answers, what each delta was promised (its
version and stamped ids) for the state check.
"""

from __future__ import annotations

import gc
import multiprocessing
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Event
from typing import Any, Final

import httpx
import msgspec
import redis

from bench.peer.workload import mine
from bench.pipeline.workload import Mix, ref_of, schedule, thread_id
from threadfold.testing import Ledger

#: One delta as the bulk body carries it: ``{"thread_id": ..., "messages": [...]}``.
Item = dict[str, Any]
#: Seconds a sender may take to get ready (plan, encode, connect) or to report.
_WAIT: Final = 600.0
_JSON: Final = {"content-type": "application/json", "accept": "application/json"}


@dataclass(frozen=True)
class Share:
    """One sender's part of a run: its threads of ``threads``, ``per_thread`` deltas
    each, in bulks of ``bulk`` with one delta per thread."""

    threads: int
    per_thread: int
    bulk: int
    senders: int
    sender: int
    seed: int

    def __post_init__(self) -> None:
        own = len(mine(self.threads, self.sender, self.senders))
        if own % self.bulk:
            raise ValueError(f"{own} threads a sender: not whole bulks of {self.bulk}, so a "
                             "bulk would carry two deltas of a thread")


def shares(threads: int, per_thread: int, bulk: int, senders: int, seed: int) -> list[Share]:
    return [Share(threads, per_thread, bulk, senders, s, seed) for s in range(senders)]


def items(share: Share, prefix: str) -> list[list[Item]]:
    """The share's bulks, each delta with its thread id (of ``prefix``). Updates and
    removes target client-chosen ids only, as :func:`bench.pipeline.e2e.plan` explains."""
    own = mine(share.threads, share.sender, share.senders)
    seed = share.seed * 100 + share.sender
    mix = Mix(share.threads, seed)
    out = []
    for bulk in schedule(len(own), share.per_thread, share.bulk, 1, seed):
        planned = [mix.next(own[i]) for i in bulk]
        out.append([{"thread_id": thread_id(p.thread, prefix), "messages": [p.message]}
                    for p in planned])
    return out


@dataclass
class Report:
    """What one sender did: deltas sent, wall clock at its first request and its last
    answer, its CPU seconds, answers that were not 202."""

    deltas: int
    first: float
    end: float
    cpu: float
    refused: int = 0
    #: The first refusal's status and body, for the report.
    refusal: str = ""


def _timed(send: Callable[[], int], deltas: int, conn: Connection, go: Event) -> Report:
    """Ready, then ``send`` once ``go`` is set; the harness's objects frozen out of the
    collector's way (as :func:`bench.pipeline.e2e.run` does)."""
    gc.collect()
    gc.freeze()
    conn.send(("ready", None))
    go.wait()
    first, cpu = time.time(), time.process_time()
    refused = send()
    return Report(deltas, first, time.time(), time.process_time() - cpu, refused)


def _reporting(conn: Connection, work: Callable[[], object]) -> None:
    """What ``work`` returns last (after its ``done``), or its failure as a traceback:
    a sender that fails is reported by the benchmark, never waited for."""
    try:
        conn.send(("promised", work()))
    except BaseException:  # noqa: BLE001  # any failure: the parent reports it
        conn.send(("error", traceback.format_exc()))
    finally:
        conn.close()


@dataclass(frozen=True)
class HttpJob:
    share: Share
    prefix: str
    url: str


def http_sender(job: HttpJob, conn: Connection, go: Event, more: Event) -> None:
    """``POST /deltas`` per bulk over one keep-alive connection, one in flight; once
    ``more`` is set (every delta visible), what the answers promised."""

    def work() -> Ledger:
        bulks = items(job.share, job.prefix)
        encode = msgspec.json.Encoder().encode
        bodies = [encode({"deltas": bulk}) for bulk in bulks]
        answers: list[httpx.Response] = []
        with httpx.Client(base_url=job.url, headers=_JSON, timeout=120) as http:
            http.get("/healthz")  # the connection open before the clock

            def send() -> int:
                for body in bodies:
                    answers.append(http.post("/deltas", content=body))
                return sum(a.status_code != 202 for a in answers)

            report = _timed(send, sum(map(len, bulks)), conn, go)
        if report.refused:
            bad = next(a for a in answers if a.status_code != 202)
            report.refusal = f"{bad.status_code} {bad.text[:300]}"
        conn.send(("done", report))
        # Decoded only now: while the workers drain, the senders keep off the cores.
        more.wait()
        return _promised(bulks, answers) if not report.refused else Ledger()

    _reporting(conn, work)


def _promised(bulks: Sequence[list[Item]], answers: Sequence[httpx.Response]) -> Ledger:
    sent = Ledger()
    for bulk, answer in zip(bulks, answers, strict=True):
        results = msgspec.json.decode(answer.content)["results"]
        for item, result in zip(bulk, results, strict=True):
            sent.add(ref_of(item["thread_id"]), result["version"], item["messages"],
                     result["ids"])
    return sent


@dataclass(frozen=True)
class BareJob:
    share: Share
    #: The thread ids' prefix of the HTTP run of the round: the same bytes a delta.
    prefix: str
    url: str
    #: The throwaway keys' prefix: an entry goes to ``<keys><thread id>``.
    keys: str


def bare_sender(job: BareJob, conn: Connection, go: Event, more: Event) -> None:
    """One pipeline of ``XADD`` per bulk, an entry per delta, its value the delta's
    JSON (the bytes it takes in the HTTP body)."""

    def work() -> None:
        encode = msgspec.json.Encoder().encode
        bulks = [[(job.keys + item["thread_id"], encode(item)) for item in bulk]
                 for bulk in items(job.share, job.prefix)]
        client = redis.Redis.from_url(job.url)
        client.ping()  # connected before the clock

        def send() -> int:
            for bulk in bulks:
                pipe = client.pipeline(transaction=False)
                for key, payload in bulk:
                    pipe.xadd(key, {"d": payload})
                pipe.execute()
            return 0

        try:
            conn.send(("done", _timed(send, sum(map(len, bulks)), conn, go)))
        finally:
            client.close()
        more.wait()

    _reporting(conn, work)


class Senders:
    """Sender processes, each ready (its bodies made, connected) before :meth:`go`."""

    def __init__(self, procs: Sequence[Any], conns: Sequence[Connection], go: Event,
                 more: Event) -> None:
        self.procs, self.conns, self._go, self._more = procs, conns, go, more

    def _next(self, conn: Connection, proc: Any, expected: str) -> Any:
        deadline = time.monotonic() + _WAIT
        while not conn.poll(0.2):
            if not proc.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"a sender exited or hung ({proc.exitcode})")
        tag, body = conn.recv()
        if tag != expected:
            raise RuntimeError(f"a sender failed:\n{body}")
        return body

    def ready(self) -> None:
        for conn, proc in zip(self.conns, self.procs, strict=True):
            self._next(conn, proc, "ready")

    def go(self) -> list[Report]:
        """Release every sender at once; their reports once all are done."""
        self._go.set()
        return [self._next(c, p, "done") for c, p in zip(self.conns, self.procs, strict=True)]

    def promised(self) -> list[Any]:
        """What each sender has to say after its run (the HTTP senders: a Ledger)."""
        self._more.set()
        out = [self._next(c, p, "promised") for c, p in zip(self.conns, self.procs, strict=True)]
        for proc in self.procs:
            proc.join(timeout=30)
        return out


@contextmanager
def started(target: Callable[[Any, Connection, Event, Event], None],
            jobs: Sequence[object]) -> Iterator[Senders]:
    """A process per job running ``target``; yielded once every one is ready."""
    ctx = multiprocessing.get_context("spawn")
    go, more = ctx.Event(), ctx.Event()
    procs, conns = [], []
    try:
        for job in jobs:
            ours, theirs = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=target, args=(job, theirs, go, more), daemon=True)
            proc.start()
            theirs.close()
            procs.append(proc)
            conns.append(ours)
        senders = Senders(procs, conns, go, more)
        senders.ready()
        yield senders
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.kill()
        for conn in conns:
            conn.close()

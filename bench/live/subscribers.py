"""1,000 SSE subscribers over 100 threads on a real stack while a paced producer writes.

The stack is the HTTP benchmark's (bench.common.stack: state and broker Redis, Celery
workers, beat, an API process group). In order: the threads are prefilled through the
API and drained; the commit clock (:mod:`bench.live.listener`) subscribes to their feed
channels; the subscriber processes (:mod:`bench.live.clients`) open their streams, each
taking its snapshot; the producer (:mod:`bench.live.producer`) writes for the run's
duration while this process samples the API's memory and, halfway, Redis's client list.
Then the pipeline drains, every subscription must reach its thread's final version,
and its messages must equal ``GET state``'s.

CPU is read over the window from the producer's start to the subscribers' last
receipt, for every process of ours (the API, the subscriber processes, the listener,
the producer, workers, Redis), so the API's cost per event sent can be told from the
benchmark's own.
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import httpx
import psutil

from bench.common.cpu import machine_busy, redis_cpu, tree_cpu, tree_times
from bench.common.stack import Api, Stack, running
from bench.live import clients, figures, listener, producer
from bench.live.clients import digest
from bench.live.figures import LiveResult, Memory
from bench.pipeline.workload import Mix, ref_of, thread_id

Progress = Callable[[str], None]
#: Spawned, not forked: a fork inherits the Celery app's broker connections, which
#: kombu closes in the child after a fork, reading from sockets the parent uses (a hang).
_CTX = multiprocessing.get_context("spawn")


@dataclass(frozen=True)
class LiveConfig:
    """The run: ``threads`` threads, ``per_thread`` subscribers each, ``rate`` deltas/s
    for ``seconds``, after ``prefill`` deltas per thread; ``client_processes`` share
    the subscriptions; ``api_workers`` uvicorn processes (one hub each)."""

    threads: int = 100
    per_thread: int = 10
    rate: float = 5000.0
    seconds: float = 60.0
    prefill: int = 20
    client_processes: int = 2
    api_workers: int = 1
    celery_workers: int = 2
    finish_timeout: float = 120.0
    seed: int = 17
    #: seconds between the producer's bulks
    tick: float = producer.TICK


def _prefill(stack: Stack, api: Api, ids: Sequence[str], per_thread: int) -> None:
    mix = Mix(len(ids), seed=7)
    deltas = [{"thread_id": ids[t], "messages": [mix.next(t).message]}
              for _ in range(per_thread) for t in range(len(ids))]
    with httpx.Client(base_url=api.url, timeout=60) as http:
        for i in range(0, len(deltas), 500):
            answer = http.post("/deltas", json={"deltas": deltas[i:i + 500]})
            answer.raise_for_status()
    stack.wait_drained(120)


class Sampler(threading.Thread):
    """The API tree's RSS every ``every`` seconds until stopped."""

    def __init__(self, pid: int, every: float = 0.5) -> None:
        super().__init__(daemon=True)
        self.pid, self.every = pid, every
        self.memory = Memory()
        self.halt = threading.Event()
        self.began = time.perf_counter()

    def rss_mb(self) -> float:
        top = psutil.Process(self.pid)
        return sum(p.memory_info().rss for p in [top, *top.children(recursive=True)]) / 2**20

    def run(self) -> None:
        while not self.halt.is_set():
            self.memory.samples.append((round(time.perf_counter() - self.began, 2),
                                        round(self.rss_mb(), 1)))
            self.halt.wait(self.every)


def redis_clients(stack: Stack, api_pid: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """Redis's clients by name, and those of the API's processes (matched by their
    local ports): how many, how many in Pub/Sub mode, their names."""
    listed = stack.client.client_list()
    by_name: dict[str, int] = {}
    for c in listed:
        by_name[c.get("name") or "(none)"] = by_name.get(c.get("name") or "(none)", 0) + 1
    top = psutil.Process(api_pid)
    ports = {c.laddr.port for p in [top, *top.children(recursive=True)]
             for c in p.net_connections(kind="tcp") if c.raddr}
    ours = [c for c in listed if int(c["addr"].rsplit(":", 1)[1]) in ports]
    pubsub = [c for c in ours if int(c.get("sub", 0)) or int(c.get("psub", 0))]
    api = {"connections": len(ours), "pubsub_connections": len(pubsub),
           "pubsub_names": [c.get("name") for c in pubsub],
           "pubsub_channels": [int(c.get("sub", 0)) for c in pubsub],
           "names": sorted({c.get("name") or "(none)" for c in ours}),
           "processes": 1 + len(top.children(recursive=True))}
    return by_name, api


@dataclass
class Child:
    """A process of the run and our end of its pipe."""

    process: Any
    conn: Connection

    @property
    def pid(self) -> int:
        return int(self.process.pid)


@contextmanager
def spawned(target: Callable[..., None], *args: Any, **kwargs: Any) -> Iterator[Child]:
    """``target(*args, **kwargs, conn=...)`` in a spawned process (killed if still running
    at the end)."""
    mine, theirs = _CTX.Pipe()
    process = _CTX.Process(target=target, args=args, kwargs={**kwargs, "conn": theirs},
                           daemon=True)
    process.start()
    try:
        yield Child(process, mine)
    finally:
        process.join(timeout=30)
        if process.is_alive():
            process.kill()


def shares(cfg: LiveConfig, ids: Sequence[str]) -> list[list[tuple[int, str]]]:
    """Each subscriber process's subscriptions: the threads' subscribers dealt round."""
    subs = [(t, ids[t]) for _ in range(cfg.per_thread) for t in range(cfg.threads)]
    return [subs[k::cfg.client_processes] for k in range(cfg.client_processes)]


def _cpu(stack: Stack, api: Api, children: dict[str, list[int]]) -> dict[str, float]:
    """CPU seconds so far of every process of the run, by role."""
    out = {name: sum(tree_cpu(pid) for pid in pids) for name, pids in children.items()}
    out["api"], out["api_sys"] = tree_times(api.process.pid)  # sys: the kernel's TCP
    out["workers"] = sum(tree_cpu(w.pid) for w in stack.workers)
    out["redis"] = redis_cpu(stack.client)
    out["broker"] = redis_cpu(stack.broker)
    out["machine"] = machine_busy()
    return out


def _states(api: Api, ids: Sequence[str]) -> dict[int, tuple[str, str]]:
    """Each thread's ``GET state``: (version, digest of its messages)."""
    out = {}
    with httpx.Client(base_url=api.url, timeout=60) as http:
        for t, tid in enumerate(ids):
            body = http.get(f"/threads/{tid}/state").json()
            assert not body["has_more"], body
            out[t] = (body["version"], digest(body["messages"]))
    return out


def _compare(answers: Sequence[dict[str, Any]], states: dict[int, tuple[str, str]]
             ) -> tuple[int, list[str], int]:
    """Subscriptions whose final messages differ from ``GET state``'s (and examples),
    and how many were compared."""
    wrong, seen = 0, 0
    examples: list[str] = []
    for answer in answers:
        for thread, version, found in answer["subscriptions"]:
            seen += 1
            want = states[thread]
            if (version, found) != want:
                wrong += 1
                if len(examples) < 5:
                    examples.append(f"thread {thread}: at {version}, GET state at {want[0]}"
                                    f"{'' if found == want[1] else ', messages differ'}")
    return wrong, examples, seen


def _start_clients(api: Api, cfg: LiveConfig, ids: Sequence[str], *,
                   enter: Callable[[Any], Any], progress: Progress) -> list[Child]:
    host, port = "127.0.0.1", api.port
    subs = [enter(spawned(clients.run, host, port, share)) for share in shares(cfg, ids)]
    for child in subs:
        if not child.conn.poll(300):
            raise RuntimeError("a subscriber process did not open its streams")
        child.conn.recv()
    progress(f"{cfg.threads * cfg.per_thread} subscribers hold their snapshots")
    return subs


def measure(cfg: LiveConfig, logs: Path, progress: Progress) -> LiveResult:
    """The whole run (see the module's doc)."""
    from contextlib import ExitStack  # noqa: PLC0415

    with running((cfg.api_workers,), cfg.celery_workers, logs) as stack, ExitStack() as ctx:
        api = stack.apis[f"api{cfg.api_workers}"]
        ids = [thread_id(i, "live") for i in range(cfg.threads)]
        _prefill(stack, api, ids, cfg.prefill)
        channels = [stack.settings.keyspace.thread(ref_of(t)).feed for t in ids]
        ready, stop, go = _CTX.Event(), _CTX.Event(), _CTX.Event()
        url = stack.settings.redis_url.get_secret_value()
        clock = ctx.enter_context(spawned(listener.run, url, channels, ready=ready, stop=stop))
        if not ready.wait(30):
            raise RuntimeError("the listener did not subscribe")
        subs = _start_clients(api, cfg, ids, enter=ctx.enter_context, progress=progress)
        writer = ctx.enter_context(spawned(producer.run, stack.settings, ids, rate=cfg.rate,
                                           seconds=cfg.seconds, seed=cfg.seed, go=go,
                                           tick=cfg.tick))
        writer.conn.recv()  # set up: its imports are not counted in the window
        roles = {"clients": [c.pid for c in subs], "listener": [clock.pid],
                 "producer": [writer.pid]}
        sampler = Sampler(api.process.pid)
        sampler.start()
        before = _cpu(stack, api, roles)
        go.set()
        progress(f"producing {cfg.rate:,.0f} deltas/s for {cfg.seconds:.0f} s")
        time.sleep(cfg.seconds / 2)
        clients_by_name, api_redis = redis_clients(stack, api.process.pid)
        produced = writer.conn.recv()
        stack.wait_drained(cfg.finish_timeout)
        finals = {t: s.version for t, s in enumerate(stack.statuses(
            [ref_of(i) for i in ids])) if s is not None}
        for child in subs:
            child.conn.send((finals, cfg.finish_timeout))
        for child in subs:
            child.conn.recv()  # reached: the window ends before the digests are made
        after = _cpu(stack, api, roles)
        sampler.halt.set()
        window = time.perf_counter() - sampler.began
        for child in subs:
            child.conn.send("answer")
        answers = [child.conn.recv() for child in subs]
        stop.set()
        commits = clock.conn.recv()
        progress("subscribers reached the final versions; comparing with GET state")
        wrong, examples, seen = _compare(answers, _states(api, ids))
    return _result(cfg, produced, commits, answers=answers,
                   compared=(wrong, examples, seen),
                   cpu={k: after[k] - before[k] for k in after}, window=window,
                   memory=sampler.memory, redis=(clients_by_name, api_redis))


def _result(cfg: LiveConfig, produced: producer.Paced, commits: dict[str, Any], *,
            answers: list[dict[str, Any]], compared: tuple[int, list[str], int],
            cpu: dict[str, float], window: float, memory: Memory,
            redis: tuple[dict[str, Any], dict[str, Any]]) -> LiveResult:
    lat, enq, unmatched = figures.latencies(commits, answers)
    snapshots: dict[str, int] = {}
    ends: dict[str, int] = {}
    for a in answers:
        for k, v in a["snapshots"].items():
            snapshots[k] = snapshots.get(k, 0) + v
        for k, v in a["ends"].items():
            ends[k] = ends.get(k, 0) + v
    return LiveResult(
        config=asdict(cfg), produced=produced.to_json(), versions=len(commits["keys"]),
        resyncs_published=commits["resyncs"], commit_to_event=lat, enqueue_to_event=enq,
        unmatched=unmatched, changes_received=sum(len(a["keys"]) for a in answers),
        subscriptions=compared[2], mismatches=compared[0], mismatch_examples=compared[1],
        snapshots=snapshots, ends=ends, chain_breaks=sum(a["chain_breaks"] for a in answers),
        finish_seconds=max(a["waited"] for a in answers), memory=memory, cpu=cpu,
        window_seconds=window, redis_clients=redis[0], api_redis=redis[1])

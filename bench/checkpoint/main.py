"""The checkpoint benchmark: LangGraph's own persistence of a conversation, through
``PostgresSaver`` and through ``threadfold.langgraph.ThreadfoldSaver``, in one run.

Run ``python -m bench.checkpoint [--quick] [--out PATH]``: prints a markdown report and
writes ``bench/results/checkpoint.json``.

1. A checkpoint read at depth. A graph of one node over ``messages:
   Annotated[list[AnyMessage], DeltaChannel(_messages_delta_reducer)]`` (snapshot
   cadence :data:`bench.checkpoint.sides.NEVER`, and LangGraph's superstep bound raised
   to it, so no snapshot is taken) runs to each depth, one AI message a superstep, on
   each saver. Then the load a graph does on resume (``pregel._loop``): ``get_tuple``
   of the thread, then ``get_delta_channel_history(config=<its config>,
   channels=["messages"])``, read by PostgresSaver (its own override), ThreadfoldSaver
   (the folded read) and the default walk (``BaseCheckpointSaver``'s method on the
   threadfold saver). The contenders' reads alternate; wall time and CPU (the
   client's, the servers') are medians of them; round trips and bytes come from a
   counted read of their own (:mod:`bench.checkpoint.sides`). The heap this process
   built before is frozen (``gc.freeze``) for a timed pass: left in, a read's
   collections scanned it, and the figures were the benchmark's heap's. Every
   contender's messages, the history replayed as the channel does, must equal the
   graph's.
2. An agent loop: model -> tool -> model (:func:`bench.checkpoint.sides.agent_graph`),
   turns on a thread prefilled to each length, over ``add_messages`` and a
   DeltaChannel, in rounds alternating the savers' order; graph steps (node runs) per
   second, CPU per step (this process and the servers', threadfold's read once its
   workers folded the run). Every round's final states must be equal.

PostgreSQL is the machine's (``--postgres``) in a database the benchmark creates and
drops (``threadfold_checkpoint``); threadfold runs on :func:`bench.common.stack.running`.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from typing import Any, Final

from langchain_core.messages import HumanMessage, convert_to_messages
from langgraph.channels.delta import DeltaChannel

from bench.checkpoint.sides import (
    CALLS,
    NEVER,
    REDUCER,
    Cost,
    Side,
    agent_graph,
    counting,
    depth_expected,
    depth_graph,
    postgres_side,
    threadfold_side,
)
from bench.common import cli, services
from bench.common.checks import Check, first_difference, lc_dump
from bench.common.inputs import thread as prefill_dicts
from bench.common.machine import code_measured, load_average
from bench.common.stack import Stack, running
from bench.common.tables import rate, report, table, target_table
from bench.common.target import Target
from bench.peer.main import database

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Sizes:
    depths: tuple[int, ...]
    reads: int
    prefills: tuple[int, ...]
    turns: int
    rounds: int


FULL: Final = Sizes((10, 1_000, 10_000), 15, (100, 2_000), 15, 3)
QUICK: Final = Sizes((10, 300), 5, (100, 400), 2, 1)
#: The API's largest request body here (THREADFOLD_MAX_BODY_BYTES).
BODY_LIMIT: Final = 16 * 1_048_576
#: A contender whose read takes longer than this is read fewer times.
SLOW_READ: Final = 1.0


# -- 1. a read at depth ------------------------------------------------------------------


def _messages(side: Side, thread: str) -> tuple[list[Any], dict[str, Any]]:
    """The thread's messages as the graph's load rebuilds them, and what it read."""
    saved, history = side.load(thread)
    values = saved.checkpoint["channel_values"]
    channel = DeltaChannel(REDUCER, list)
    if "messages" in values:  # a snapshot: LangGraph would not have walked
        return list(channel.from_checkpoint(values["messages"]).get()), {"seeded": True}
    found = history["messages"]
    rebuilt = channel.from_checkpoint(found.get("seed"))
    rebuilt.replay_writes(found["writes"])
    return list(rebuilt.get()), {"writes": len(found["writes"]), "seeded": "seed" in found}


def _counted(side: Side, thread: str, times: int) -> dict[str, Any]:
    """Round trips, commands and bytes of one read (each the least of ``times`` reads:
    the servers' counters also see what else ran meanwhile)."""
    costs: list[Cost] = []
    trips: list[int] = []
    for _ in range(times):
        before = side.meter.cost()
        with counting(trips):
            side.load(thread)
        costs.append(side.meter.cost().minus(before))
    return {"trips": min(trips), "commands": min(c.commands for c in costs) or min(trips),
            "bytes_in": min(c.bytes_in for c in costs),
            "bytes_out": min(c.bytes_out for c in costs)}


def _timed(side: Side, thread: str) -> tuple[float, float, float]:
    """One read: wall seconds, this process's CPU, the servers'."""
    server, client, wall = side.meter.cpu(), time.process_time(), time.perf_counter()
    side.load(thread)
    wall, client = time.perf_counter() - wall, time.process_time() - client
    return wall, client, side.meter.cpu() - server


@contextmanager
def _own_garbage() -> Iterator[None]:
    """What this process built before (graphs of 10,000 steps, other savers' threads)
    out of the collector's way: the timed calls' collections scan what they allocate,
    as in a process serving a graph, not this benchmark's heap."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _build(side: Side, depth: int, thread: str) -> float:
    graph = depth_graph(side.saver, depth)
    started = time.perf_counter()
    graph.invoke({"messages": [HumanMessage(content="go", id="m0")]},
                 {"configurable": {"thread_id": thread}, "recursion_limit": depth + 10})
    return time.perf_counter() - started


def _checked(side: Side, depth: int, thread: str, reads: int) -> dict[str, Any]:
    """A first read: its messages checked against the graph's, its round trips and
    bytes counted, and how many timed reads it is worth."""
    started = time.perf_counter()
    got, shape = _messages(side, thread)
    took = time.perf_counter() - started
    detail = first_difference(lc_dump(got), lc_dump(depth_expected(depth)))
    many = took < SLOW_READ
    return {"depth": depth, "saver": side.name, "messages": len(got), "matches": not detail,
            "detail": detail, **shape, **_counted(side, thread, 3 if many else 1),
            "reads": reads if many else (3 if took < 10 else 1)}


def _depth(depth: int, sides: Sequence[Side], stack: Stack, reads: int,
           say: Progress) -> tuple[list[dict[str, Any]], list[Check]]:
    thread = f"depth-{depth}"
    built = {id(s.saver): _build(s, depth, thread) for s in sides if not s.walk}
    stack.wait_drained(600)
    rows = [{**_checked(s, depth, thread, reads), "build_s": built[id(s.saver)]} for s in sides]
    failures = [Check(f"{r['saver']} at depth {depth}", False, r["detail"]) for r in rows
                if not r["matches"]]
    samples: dict[str, list[tuple[float, float, float]]] = {s.name: [] for s in sides}
    with _own_garbage():
        for i in range(max(r["reads"] for r in rows)):
            for side, row in _rotated(list(zip(sides, rows, strict=True)), i):
                if i < row["reads"]:
                    samples[side.name].append(_timed(side, thread))
    for row in rows:
        walls, clients, servers = zip(*samples[row["saver"]], strict=True)
        row.update(wall_ms=1e3 * statistics.median(walls),
                   client_cpu_us=1e6 * statistics.median(clients),
                   server_cpu_us=1e6 * statistics.median(servers))
        say(f"  depth {depth:,} {row['saver']}: {row['wall_ms']:,.1f} ms, "
            f"{row['trips']} round trips")
    return rows, failures


def _rotated(items: list[Any], i: int) -> list[Any]:
    at = i % len(items)
    return items[at:] + items[:at]


def depth_part(sizes: Sizes, stack: Stack, dsn: str,
               say: Progress) -> tuple[list[dict[str, Any]], list[Check]]:
    folded = threadfold_side("threadfold", stack)
    sides = [postgres_side(dsn), folded, replace(folded, name=f"{folded.name}-walk", walk=True)]
    rows, failures = [], []
    try:
        for depth in sizes.depths:
            say(f"depth {depth:,}")
            got, failed = _depth(depth, sides, stack, sizes.reads, say)
            rows += got
            failures += failed
    finally:
        sides[0].close()
        folded.close()
    return rows, failures


# -- 2. an agent loop --------------------------------------------------------------------


def _turns(side: Side, stack: Stack, prefill: list[Any], *, delta: bool,
           thread: str, turns: int) -> tuple[dict[str, float], list[dict[str, Any]]]:
    graph = agent_graph(side.saver, delta)
    config = {"configurable": {"thread_id": thread}}
    graph.update_state(config, {"messages": prefill}, as_node="model")
    stack.wait_drained(600)
    with _own_garbage():
        server, client, wall = side.meter.cpu(), time.process_time(), time.perf_counter()
        for t in range(turns):
            graph.invoke({"messages": [HumanMessage(content=f"question {t}", id=f"human-{t}")]},
                         config)
        wall, client = time.perf_counter() - wall, time.process_time() - client
    stack.wait_drained(600)  # threadfold's workers' folding counted in
    steps = turns * (2 * CALLS + 1)
    server = side.meter.cpu() - server
    figures = {"steps": steps, "seconds": wall, "rate": steps / wall,
               "client_cpu_us": 1e6 * client / steps, "server_cpu_us": 1e6 * server / steps,
               "cpu_us": 1e6 * (client + server) / steps}
    return figures, lc_dump(graph.get_state(config).values["messages"])


def _agent_round(r: int, length: int, sides: Sequence[Side], stack: Stack, *,
                 delta: bool, turns: int) -> tuple[dict[str, dict[str, float]], list[Check]]:
    prefill = convert_to_messages(prefill_dicts(length, random.Random(length)))
    order = list(sides) if r % 2 == 0 else list(reversed(sides))
    out, states = {}, {}
    for side in order:
        thread = f"agent-{length}-{'delta' if delta else 'add'}-r{r}-{side.name}"
        out[side.name], states[side.name] = _turns(side, stack, prefill, delta=delta,
                                                    thread=thread, turns=turns)
    failures = []
    reference = states[sides[0].name]
    if len(reference) != length + turns * (2 * CALLS + 2):
        failures.append(Check(f"agent {length}", False, f"{len(reference)} messages"))
    for name, state in states.items():
        if detail := first_difference(state, reference):
            failures.append(Check(f"{name} agent {length} delta={delta} round {r}", False, detail))
    return out, failures


def agent_part(sizes: Sizes, stack: Stack, dsn: str,
               say: Progress) -> tuple[list[dict[str, Any]], list[Check]]:
    sides = [postgres_side(dsn), threadfold_side("threadfold", stack),
             threadfold_side("threadfold-http", stack, http=True)]
    rows, failures = [], []
    try:
        for length in sizes.prefills:
            for delta in (False, True):
                channel = "DeltaChannel" if delta else "add_messages"
                per: dict[str, list[dict[str, float]]] = {s.name: [] for s in sides}
                for r in range(sizes.rounds):
                    say(f"agent loop, {length:,} messages, {channel}, round {r + 1}")
                    got, failed = _agent_round(r, length, sides, stack, delta=delta,
                                              turns=sizes.turns)
                    failures += failed
                    for name, figures in got.items():
                        per[name].append(figures)
                rows += [{"length": length, "channel": channel, "saver": name,
                          "states_compared": len(runs),
                          **{k: statistics.median(f[k] for f in runs) for k in runs[0]}}
                         for name, runs in per.items()]
    finally:
        for side in sides:
            side.close()
    return rows, failures


# -- targets and report ------------------------------------------------------------------


def _by(rows: Sequence[dict[str, Any]], *keys: str) -> dict[tuple[Any, ...], dict[str, Any]]:
    return {tuple(r[k] for k in keys): r for r in rows}


def _cpu(row: dict[str, Any]) -> float:
    return float(row["client_cpu_us"] + row["server_cpu_us"])


def _read_targets(rows: Sequence[dict[str, Any]]) -> list[Target]:
    at = _by(rows, "depth", "saver")
    deepest = max(r["depth"] for r in rows)
    folded = next(r["saver"] for r in rows if r["saver"] != "postgres" and not
                  r["saver"].endswith("-walk"))
    pg, ours = at[deepest, "postgres"], at[deepest, folded]
    wall, cpu = pg["wall_ms"] / ours["wall_ms"], _cpu(pg) / _cpu(ours)
    trips = [r["trips"] for r in rows if r["saver"] == folded]
    shallow = at[min(r["depth"] for r in rows), folded]
    return [
        Target(f"{folded} read vs PostgresSaver at {deepest:,}: wall", ">= 10x",
               f"{wall:.1f}x", wall >= 10, f"{ours['wall_ms']:.1f} vs {pg['wall_ms']:.1f} ms"),
        Target(f"{folded} read vs PostgresSaver at {deepest:,}: CPU", ">= 10x",
               f"{cpu:.1f}x", cpu >= 10, f"{_cpu(ours):,.0f} vs {_cpu(pg):,.0f} µs"),
        Target(f"{folded} read flat in depth: round trips", "equal at every depth",
               f"{min(trips)}..{max(trips)}", min(trips) == max(trips),
               f"CPU {_cpu(ours) / _cpu(shallow):.1f}x and wall "
               f"{ours['wall_ms'] / shallow['wall_ms']:.1f}x from depth "
               f"{shallow['depth']:,} to {deepest:,}"),
    ]


def _agent_targets(rows: Sequence[dict[str, Any]]) -> list[Target]:
    at = _by(rows, "length", "channel", "saver")
    out = []
    for saver in dict.fromkeys(r["saver"] for r in rows if r["saver"] != "postgres"):
        ratios = {(n, c): at[n, c, saver]["rate"] / at[n, c, "postgres"]["rate"]
                  for n, c, s in at if s == saver}
        (n, c), worst = min(ratios.items(), key=lambda kv: kv[1])
        out.append(Target(f"{saver} agent loop steps/s vs PostgresSaver", ">= 1x (every size)",
                          f"{worst:.2f}x", worst >= 1, f"worst at {n:,} messages, {c}"))
    return out


def _depth_table(rows: Sequence[dict[str, Any]]) -> list[str]:
    at = _by(rows, "depth", "saver")
    head = ["depth", "saver", "round trips (server cmds)", "read ms (median)",
            "CPU µs a read: client + servers", "PostgresSaver's / this: wall, CPU",
            "bytes in / out", "history writes, seed", "reads", "build s"]
    body = []
    for r in rows:
        pg = at[r["depth"], "postgres"]
        body.append([f"{r['depth']:,}", r["saver"], f"{r['trips']} ({r['commands']})",
                     f"{r['wall_ms']:,.2f}",
                     f"{_cpu(r):,.0f} = {r['client_cpu_us']:,.0f} + {r['server_cpu_us']:,.0f}",
                     f"{pg['wall_ms'] / r['wall_ms']:.1f}x, {_cpu(pg) / _cpu(r):.1f}x",
                     f"{r['bytes_in']:,} / {r['bytes_out']:,}",
                     f"{r.get('writes', 0):,}, {'yes' if r['seeded'] else 'no'}",
                     str(r["reads"]), f"{r['build_s']:.1f}"])
    return table(head, body)


def _agent_table(rows: Sequence[dict[str, Any]]) -> list[str]:
    at = _by(rows, "length", "channel", "saver")
    head = ["thread", "channel", "saver", "steps/s", "x PostgresSaver",
            "CPU µs a step: client + servers"]
    return table(head, [
        [f"{r['length']:,} + turns", r["channel"], r["saver"], rate(r["rate"]),
         f"{r['rate'] / at[r['length'], r['channel'], 'postgres']['rate']:.2f}x",
         f"{r['cpu_us']:,.0f} = {r['client_cpu_us']:,.0f} + {r['server_cpu_us']:,.0f}"]
        for r in rows])


def render(data: dict[str, Any]) -> str:
    meta, sizes = data["meta"], data["meta"]["sizes"]
    targets = [Target(**t) for t in data["targets"]]
    return report([
        [f"A checkpoint read at depth: `get_tuple` + `get_delta_channel_history` of a "
         f"DeltaChannel never snapshotted (snapshot_frequency {NEVER:,}), one AI message "
         "a superstep; medians of the reads", "", *_depth_table(data["depth"])],
        [f"An agent loop: {sizes['turns']} turns of model -> tool x {CALLS} -> model on a "
         "prefilled thread, medians of "
         f"{sizes['rounds']} round(s), order alternated", "", *_agent_table(data["agent"])],
        ["Targets", "", *target_table(targets)],
        [f"checks: {len(data['failures'])} failed; the API's body limit "
         f"{meta['api_max_body_bytes']:,} bytes; load {meta['load_before_after']}; "
         f"code {meta['code']}; {meta['seconds']:.0f} s"],
    ])


def measure(sizes: Sizes, server: str, say: Progress) -> dict[str, Any]:
    # The API reads it from its environment at start: its default (1 MiB) refuses a put
    # of a 2,000-message add_messages channel (the whole list is the channel's blob).
    os.environ["THREADFOLD_MAX_BODY_BYTES"] = str(BODY_LIMIT)
    with services.log_dir() as logs, running([1], 2, logs) as stack, \
            database(server, "threadfold_checkpoint") as dsn:
        depth, failed = depth_part(sizes, stack, dsn, say)
        agent, failed_too = agent_part(sizes, stack, dsn, say)
    targets = _read_targets(depth) + _agent_targets(agent)
    return {"depth": depth, "agent": agent, "targets": [asdict(t) for t in targets],
            "failures": [asdict(f) for f in failed + failed_too]}


def main(argv: Sequence[str] | None = None) -> int:
    parser = cli.parser("checkpoint", __doc__, "small depths and threads, one round")
    parser.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432",
                        help="the PostgreSQL server (its database threadfold_checkpoint)")
    args: argparse.Namespace = parser.parse_args(argv)
    mode, sizes = cli.sizes(args, FULL, QUICK)
    started = time.perf_counter()
    begun = cli.Begun(args, mode, sizes, started, load_average(), code_measured())
    data = measure(sizes, args.postgres, cli.progress(started))
    data["meta"] = {**begun.facts(), "sizes": asdict(sizes), "snapshot_frequency": NEVER,
                    "api_max_body_bytes": BODY_LIMIT}
    failed = [Check(**f) for f in data["failures"]]
    return cli.finish(cli.out_path("checkpoint", args), data, render(data), failed)


if __name__ == "__main__":
    sys.exit(main())

"""The feed's cost on the headline end-to-end rate: the pipeline's headline run
(:func:`bench.pipeline.e2e.run`, 1,000 threads x 100 mixed deltas, states verified) with
the code before the feed ("without", a worktree of ``BEFORE``) and with this tree's
commit ("with"), alternated.

Each side is one child process in its own worktree (:mod:`bench.live.ab_child`) holding
its own services (state and broker Redis, 2 Celery workers) up for the whole A/B; the
idle side costs nothing but its workers' broker polls. Rounds alternate which side runs
first (A B, B A, ...), and each round's ratio compares two runs minutes apart, so a
shift of the machine's load lands on both sides of most ratios. Every run's states are
checked, and its Redis shows which COMMIT ran: without the feed no thread has a feed
stream and nothing is published; with it every thread has one.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final

from bench.live import trees

#: The parent of the feed commit (d13e8ad): the code before the feed.
BEFORE: Final = "24fc5c9"

Progress = Callable[[str], None]


@dataclass
class Side:
    """One contender: its tree's commit, the proof of the code its driver imported,
    and its runs."""

    name: str
    commit: str
    proof: dict[str, Any] = field(default_factory=dict)
    runs: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class AB:
    """Both sides' runs, round by round (``order``: which side ran first)."""

    without: Side
    with_feed: Side
    order: list[str]
    mode: str
    problems: list[str] = field(default_factory=list)

    def ratios(self, key: str) -> list[float]:
        """Per round, with / without of ``key``."""
        return [w[key] / o[key] for w, o in zip(self.with_feed.runs, self.without.runs,
                                                strict=True)]

    @property
    def rate_ratio(self) -> float:
        """The median over rounds of with / without (the headline rate)."""
        return statistics.median(self.ratios("rate"))

    @property
    def cost(self) -> float:
        """The feed's cost on the headline rate: 1 - the median ratio."""
        return 1.0 - self.rate_ratio

    def to_json(self) -> dict[str, Any]:
        keys = ("rate", "cpu_per_delta_us", "worker_us", "redis_us")
        return {"mode": self.mode, "order": self.order, "problems": self.problems,
                "without": asdict(self.without), "with": asdict(self.with_feed),
                "ratios": {k: self.ratios(k) for k in keys},
                "median_ratio": {k: statistics.median(self.ratios(k)) for k in keys},
                "feed_cost_on_rate": self.cost}


class Child:
    """A side's driver process (see :mod:`bench.live.ab_child`)."""

    def __init__(self, tree: Path, quick: bool, log: Path) -> None:
        self.log = log.open("w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bench.live.ab_child", "--quick" if quick else "--full"],
            cwd=tree, env=trees.env_for(tree), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.log, text=True)

    def read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"an A/B side exited; see {self.log.name}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def run(self, prefix: str) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(f"run {prefix}\n")
        self.process.stdin.flush()
        return self.read()

    def close(self) -> None:
        if self.process.stdin is not None and self.process.poll() is None:
            self.process.stdin.write("quit\n")
            self.process.stdin.close()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        self.log.close()


def _proof_problems(side: Side, tree: Path, feed: bool, ready: dict[str, Any]) -> list[str]:
    proof = ready["proof"]
    out = []
    if not proof["threadfold"].startswith(str(tree)):
        out.append(f"{side.name}: driver imported {proof['threadfold']}, not {tree}")
    if proof["commit_publishes"] != feed:
        out.append(f"{side.name}: its COMMIT {'lacks' if feed else 'has'} the feed")
    out += [f"{side.name}: a worker runs in {cwd}" for cwd in ready["workers_cwd"]
            if cwd != str(tree)]
    return out


def _run_problems(side: Side, run: dict[str, Any], feed: bool, threads: int) -> list[str]:
    out = []
    if not run["check"]["ok"]:
        out.append(f"{side.name}: wrong states: {run['check']['detail']}")
    published = run["commands"].get("publish", {}).get("calls", 0)
    if feed and (run["feed_streams"] != threads or published == 0):
        out.append(f"{side.name}: {run['feed_streams']} feed streams, {published} publishes")
    if not feed and (run["feed_streams"] or published):
        out.append(f"{side.name}: the code before the feed left {run['feed_streams']} "
                   f"feed streams and {published} publishes")
    return out


def shown(proof: dict[str, Any], tree: Path) -> dict[str, Any]:
    """``proof`` as the results keep it: paths relative to the worktree (``<worktree>``),
    the interpreter as whether it is this process's (no machine paths in the results)."""

    def rel(value: Any) -> Any:
        if isinstance(value, list):
            return [rel(v) for v in value]
        if isinstance(value, str) and value.startswith(str(tree)):
            return "<worktree>" + value[len(str(tree)):]
        return value

    out = {k: rel(v) for k, v in proof.items() if k != "python"}
    out["same_python"] = proof.get("python") == sys.executable
    return out


@contextmanager
def _children(quick: bool, after: str, logs: Path) -> Iterator[tuple[AB, dict[str, Child]]]:
    with trees.temporary() as parent, ExitStack() as stack:
        ab = AB(Side("without", trees.resolve(BEFORE)), Side("with", trees.resolve(after)),
                [], "quick" if quick else "full")
        children: dict[str, Child] = {}
        for side, feed in ((ab.without, False), (ab.with_feed, True)):
            tree = stack.enter_context(trees.worktree(side.commit, parent))
            child = Child(tree, quick, logs / f"ab-{side.name}.log")
            stack.callback(child.close)
            ready = child.read()
            ab.problems += _proof_problems(side, tree, feed, ready)
            side.proof = shown({**ready["proof"], "workers_cwd": ready["workers_cwd"]}, tree)
            children[side.name] = child
        yield ab, children


def measure(rounds: int, quick: bool, threads: int, logs: Path, progress: Progress, *,
            after: str = "HEAD") -> AB:
    """``rounds`` alternated pairs of headline runs, without and with the feed."""
    with _children(quick, after, logs) as (ab, children):
        progress(f"A/B: without = {ab.without.commit[:9]}, with = {ab.with_feed.commit[:9]}")
        for n in range(rounds):
            sides = (ab.without, ab.with_feed) if n % 2 == 0 else (ab.with_feed, ab.without)
            for side in sides:
                run = children[side.name].run(f"{side.name[0]}{n}")
                side.runs.append(run)
                ab.order.append(side.name)
                ab.problems += _run_problems(side, run, side is ab.with_feed, threads)
                progress(f"A/B round {n} {side.name}: {run['rate']:,.0f} deltas/s, "
                         f"{run['cpu_per_delta_us']:.1f} us CPU/delta")
    return ab

"""A/B of a redesign: CPU per HTTP request and per delta, base tree against head tree.

Run ``python -m bench.ab --base REV [--head REV|DIR] [--rounds N] [--quick] [--out
PATH]``. ``--base`` is checked out in a temporary ``git worktree`` (outside the
repository, removed afterwards) with this tree's ``bench/`` copied over its own, and
the oracle bench checks with (``threadfold/testing``: :mod:`bench.ab.trees`), so both
sides are driven and checked by the same benchmark code. The head is this checkout as
it is, uncommitted changes included (the default, ``--head .``), another commit (a
worktree too), or a directory holding a tree whose benchmark code equals this one's.
Every process of a side runs in its tree (working directory and ``PYTHONPATH``, the
same venv): see :mod:`bench.ab.proof` for how each side shows which ``threadfold`` it
and its services ran.

Each side is one driver process (:mod:`bench.ab.side`) holding its own services up for
the whole A/B: the HTTP benchmark's stack (state and broker Redis, Celery workers, beat,
the API) and the pipeline's end-to-end services. A round gives each side one turn, in
alternating order (base head, head base, ...): a closed loop of POST
/threads/{id}/deltas (fresh threads, drained and verified), a closed loop of GET
/threads/{id}/state, and the pipeline's headline end-to-end run (states verified).
Judged (:mod:`bench.ab.figures`): the API's CPU per POST and per GET (its processes'
user + system time over the load, divided by the requests answered) and the end-to-end
CPU per delta (producer, workers, state and broker Redis); the workers' CPU per delta
under the POSTs and the rest are reported. Per side the medians over rounds, per round
head / base and the median of those ratios: a ratio compares two turns a few seconds
apart, so a shift of the machine's load lands on both sides of most ratios.

A wrong answer or a proof that a side ran other code than its tree's is a problem:
listed in the JSON and the report, exit status 1.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.ab import figures, proof
from bench.ab import trees as ab_trees
from bench.ab.sizes import FULL, QUICK, Sizes
from bench.common import cli
from bench.common.machine import load_average
from bench.live import trees

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Tree:
    """One side's tree: ``kind`` is ``worktree`` (a temporary checkout of ``rev``),
    ``checkout`` (this one, as it is) or ``directory`` (given, used as it is)."""

    name: str
    rev: str
    commit: str
    path: Path
    kind: str

    @property
    def dirty(self) -> int:
        """Files of the code under test that differ from ``commit`` (0 in a worktree)."""
        out = trees.git("status", "--porcelain", "--", *proof.CODE, cwd=self.path)
        return len(out.splitlines())

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "rev": self.rev, "commit": self.commit, "kind": self.kind,
                "dirty": self.dirty, "code_sha256": proof.fingerprint(self.path),
                "bench_sha256": ab_trees.digest(self.path)}


@contextmanager
def _tree(name: str, rev: str, parent: Path) -> Iterator[Tree]:
    given = Path(rev)
    if rev == "." or (given.is_dir() and given.resolve() == trees.ROOT):
        yield Tree(name, rev, trees.resolve("HEAD"), trees.ROOT, "checkout")
    elif given.is_dir():
        path = given.resolve()
        if ab_trees.digest(path) != ab_trees.digest(trees.ROOT):
            raise SystemExit(f"{rev}: its bench/ (or the tests/ modules bench imports) differs "
                             "from this tree's; copy them in first")
        yield Tree(name, rev, trees.git("rev-parse", "HEAD", cwd=path), path, "directory")
    else:
        commit = trees.resolve(rev)
        (parent / name).mkdir()
        with ab_trees.worktree(commit, parent / name) as path:
            yield Tree(name, rev, commit, path.resolve(), "worktree")


class Driver:
    """A side's driver process (:mod:`bench.ab.side`), run in its tree."""

    def __init__(self, tree: Tree, sizes: Sizes, log: Path) -> None:
        self.tree = tree
        self.log_path = log
        self.log = log.open("w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bench.ab.side", sizes.to_json()], cwd=tree.path,
            env=trees.env_for(tree.path), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.log, text=True)

    def read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            self.log.flush()
            tail = self.log_path.read_text()[-3000:]
            raise RuntimeError(f"the {self.tree.name} side exited; its log ends:\n{tail}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def ask(self, command: str) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        return self.read()

    def close(self) -> None:
        if self.process.stdin is not None:
            with suppress(OSError):  # the side may have exited: a broken pipe
                if self.process.poll() is None:
                    self.process.stdin.write("quit\n")
                self.process.stdin.close()
        try:
            self.process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        self.log.close()


def _turn_problems(name: str, turn: dict[str, Any]) -> list[str]:
    checks = [turn["http"]["post"]["check"], turn["http"]["get"]["check"], turn["e2e"]["check"]]
    return [f"{name}: {c['name']}: {c['detail']}" for c in checks if not c["ok"]]


@contextmanager
def _sides(base: str, head: str, sizes: Sizes, logs: Path,
           problems: list[str]) -> Iterator[dict[str, tuple[Tree, Driver, dict[str, Any]]]]:
    """Both trees and their drivers, started together; name -> (tree, driver, proof)."""
    with trees.temporary() as parent, ExitStack() as stack:
        found = [stack.enter_context(_tree(n, rev, parent))
                 for n, rev in (("base", base), ("head", head))]
        drivers = []
        for tree in found:
            driver = Driver(tree, sizes, logs / f"ab-{tree.name}.log")
            stack.callback(driver.close)
            drivers.append(driver)
        out = {}
        for tree, driver in zip(found, drivers, strict=True):
            ready = driver.read()
            problems += proof.problems(tree.name, ready["proof"], tree.path)
            if not ready["prefill"]["ok"]:
                problems.append(f"{tree.name}: {ready['prefill']['name']}: "
                                f"{ready['prefill']['detail']}")
            out[tree.name] = (tree, driver, proof.relative(ready, tree.path))
        yield out


def measure(base: str, head: str, sizes: Sizes, logs: Path, progress: Progress) -> dict[str, Any]:
    """``sizes.rounds`` rounds of one turn per side, alternated; the results' JSON."""
    problems: list[str] = []
    load_before = load_average()
    with _sides(base, head, sizes, logs, problems) as sides:
        turns: dict[str, list[dict[str, Any]]] = {"base": [], "head": []}
        order: list[str] = []
        progress("sides up: " + ", ".join(f"{n} {t.commit[:9]} ({t.kind})"
                                          for n, (t, _, _) in sides.items()))
        for n in range(sizes.rounds):
            names = ("base", "head") if n % 2 == 0 else ("head", "base")
            order.append(" ".join(names))
            for name in names:
                driver = sides[name][1]
                turn: dict[str, Any] = {"round": n, "http": driver.ask(f"http {name[0]}{n}"),
                                        "e2e": driver.ask(f"e2e {name[0]}{n}")}
                f = turn["figures"] = figures.figures(turn)
                turns[name].append(turn)
                problems += _turn_problems(name, turn)
                progress(f"round {n} {name}: API {f['http_post_api_us']:.0f} us/POST, "
                         f"{f['http_get_api_us']:.0f} us/GET; end to end "
                         f"{f['e2e_cpu_per_delta_us']:.1f} us/delta")
        data = _results(sides, turns, order, problems)
    if data["base"]["bench_sha256"] != data["head"]["bench_sha256"]:
        problems.append("the two sides' bench/ differ")
    data["meta"] = {"load_before": load_before, "load_after": load_average(),
                    "cores": os.cpu_count(), "python": sys.version.split()[0],
                    "platform": platform.platform(), "sizes": asdict(sizes)}
    return data


def _results(sides: dict[str, tuple[Tree, Driver, dict[str, Any]]],
             turns: dict[str, list[dict[str, Any]]], order: list[str],
             problems: list[str]) -> dict[str, Any]:
    ratios = figures.ratios(turns["head"], turns["base"])
    median_ratio = {k: statistics.median(v) for k, v in ratios.items()}
    out: dict[str, Any] = {"order": order, "problems": problems, "ratios": ratios,
                           "median_ratio": median_ratio,
                           "judged": figures.judged(median_ratio)}
    for name, (tree, _, ready) in sides.items():
        out[name] = {**tree.to_json(), "proof": ready["proof"], "prefill": ready["prefill"],
                     "medians": figures.medians(turns[name]), "turns": turns[name]}
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = cli.parser("ab", __doc__, "tiny sizes, 1 round: a few seconds per turn")
    parser.add_argument("--base", required=True, help="the commit before (a git revision)")
    parser.add_argument("--head", default=".",
                        help="'.' (this checkout as it is, the default), a revision, "
                             "or a directory holding a tree with this bench/")
    parser.add_argument("--rounds", type=int, default=None,
                        help=f"rounds (default {FULL.rounds}, {QUICK.rounds} with --quick)")
    parser.add_argument("--logs", type=Path, default=None,
                        help="keep the sides' logs in this directory")
    args = parser.parse_args(argv)
    mode, sizes = cli.sizes(args, FULL, QUICK)
    sizes = sizes.with_rounds(args.rounds)
    started = time.perf_counter()
    with ExitStack() as stack:
        logs: Path = args.logs or Path(stack.enter_context(
            tempfile.TemporaryDirectory(prefix="threadfold-ab-logs-")))
        logs.mkdir(parents=True, exist_ok=True)
        data = measure(args.base, args.head, sizes, logs, cli.progress(started))
    data["meta"] = {"mode": mode, "seconds": round(time.perf_counter() - started, 1),
                    **data["meta"]}
    out = cli.out_path("ab", args)
    cli.write(out, data)
    print(figures.markdown(data))
    for problem in data["problems"]:
        print(f"PROBLEM: {problem}", file=sys.stderr)
    return 1 if data["problems"] else 0

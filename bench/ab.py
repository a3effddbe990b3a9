"""A/B of any benchmark between two commits: every figure, base against head.

Run ``python -m bench.ab NAME --base REV [--head REV|.] [--rounds N] [--quick]
[--keys GLOB ...] [--out PATH] [-- ARGS...]`` (or ``threadfold bench ab ...``).

Each side is a tree: ``--base`` checked out in a temporary ``git worktree`` (outside the
repository, removed afterwards); the head is this checkout as it is, uncommitted changes
included (``--head .``, the default), or another commit in a worktree too. The head's
``bench/`` and the oracle it checks states with (``threadfold/testing``) are copied over
the base's, so both sides are driven and checked by the same benchmark code and differ
only in the product. A side runs ``python -m bench.NAME [--quick] ARGS --out FILE`` in
its tree (working directory and ``PYTHONPATH``, this venv), so the benchmark and every
process it starts import that tree's ``threadfold``; the driver checks that they do.

A round runs both sides, in alternating order (base head, head base, ...). Every
numeric leaf of the result JSON (a dotted path: ``rows.0.redis_cpu_us``) is reported
per side as the median over rounds, and as the median of the rounds' head / base
ratios: a ratio compares two runs made close in time, so a change in the machine's load
lands on both sides of most of them. A side whose benchmark fails (exit status not 0:
a failed check is a failure, not a result) stops the A/B with exit status 1.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.common import cli

#: This checkout (bench/ab.py -> the repository).
ROOT = Path(__file__).resolve().parents[1]
#: What a side's tree takes from the head's: the benchmarks and the oracle they check with.
SHARED = (Path("bench"), Path("threadfold", "testing"))
THIS = "."


def benchmarks(root: Path = ROOT) -> list[str]:
    """The benchmarks: the packages of ``bench/`` that run as ``python -m bench.NAME``."""
    return sorted(p.parent.name for p in (root / "bench").glob("*/__main__.py"))


def git(*argv: str, cwd: Path = ROOT) -> str:
    done = subprocess.run(["git", *argv], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


@dataclass(frozen=True)
class Side:
    """One side: the revision asked for, its commit, and the tree it runs in."""

    name: str
    rev: str
    commit: str
    tree: Path
    #: uncommitted changes in the tree (this checkout's, or bench/ copied in)
    changed: bool


@contextmanager
def worktree(commit: str, parent: Path) -> Iterator[Path]:
    """``commit`` checked out (detached) under ``parent``; removed afterwards."""
    path = parent / commit[:12]
    git("worktree", "add", "--detach", str(path), commit)
    try:
        yield path
    finally:
        git("worktree", "remove", "--force", str(path))
        git("worktree", "prune")


def copy_shared(source: Path, tree: Path) -> None:
    """The head's benchmark code and oracle over ``tree``'s own."""
    for rel in SHARED:
        shutil.rmtree(tree / rel, ignore_errors=True)
        shutil.copytree(source / rel, tree / rel,
                        ignore=shutil.ignore_patterns("__pycache__", "results"))


def env_for(tree: Path) -> dict[str, str]:
    """A side's environment (its children inherit it): its tree first on the path."""
    return {**os.environ, "PYTHONPATH": str(tree)}


def imports_its_tree(tree: Path) -> bool:
    """Whether a process started as a side's imports ``threadfold`` from ``tree``."""
    code = "import threadfold; print(threadfold.__file__)"
    done = subprocess.run([sys.executable, "-c", code], cwd=tree, env=env_for(tree),
                          capture_output=True, text=True, check=True)
    return Path(done.stdout.strip()).resolve().is_relative_to(tree.resolve())


@contextmanager
def sides(base: str, head: str, parent: Path) -> Iterator[tuple[Side, Side]]:
    """Both sides' trees, ready to run (the worktrees removed afterwards)."""
    with ExitStack() as stack:
        head_commit = git("rev-parse", "--verify", f"{'HEAD' if head == THIS else head}^{{commit}}")
        if head == THIS:
            head_tree, changed = ROOT, bool(git("status", "--porcelain"))
        else:
            head_tree, changed = stack.enter_context(worktree(head_commit, parent / "head")), False
        base_commit = git("rev-parse", "--verify", f"{base}^{{commit}}")
        base_tree = stack.enter_context(worktree(base_commit, parent / "base"))
        copy_shared(head_tree, base_tree)
        base_changed = bool(git("status", "--porcelain", cwd=base_tree))
        yield (Side("base", base, base_commit, base_tree, base_changed),
               Side("head", head, head_commit, head_tree, changed))


class SideFailed(Exception):
    """A side's benchmark exited with a failure, or wrote no result."""


def run_side(side: Side, command: Sequence[str], out: Path, log: Path) -> tuple[Any, float]:
    """The benchmark run once in ``side``'s tree: its result JSON and its seconds."""
    began = time.perf_counter()
    with log.open("w") as sink:
        code = subprocess.call([*command, "--out", str(out)], cwd=side.tree,
                               env=env_for(side.tree), stdout=sink, stderr=subprocess.STDOUT)
    seconds = time.perf_counter() - began
    if code != 0 or not out.is_file():
        tail = log.read_text(errors="replace")[-3000:]
        raise SideFailed(f"{side.name} ({side.rev}) exited {code} after {seconds:.0f} s:\n{tail}")
    return json.loads(out.read_text()), seconds


def leaves(data: object, prefix: str = "") -> dict[str, float]:
    """Every number in ``data`` by its dotted path (list items by index; no booleans)."""
    if isinstance(data, bool):
        return {}
    if isinstance(data, int | float):
        return {prefix: float(data)}
    items: list[tuple[str, object]] = []
    if isinstance(data, dict):
        items = [(str(k), v) for k, v in data.items()]
    elif isinstance(data, list):
        items = [(str(i), v) for i, v in enumerate(data)]
    found: dict[str, float] = {}
    for key, value in items:
        found.update(leaves(value, f"{prefix}.{key}" if prefix else key))
    return found


@dataclass(frozen=True)
class Leaf:
    """One figure: each side's median over rounds, and the rounds' head / base ratios."""

    base: float
    head: float
    ratios: list[float] = field(default_factory=list)

    @property
    def ratio(self) -> float | None:
        return statistics.median(self.ratios) if self.ratios else None


def compare(rounds: Sequence[tuple[dict[str, float], dict[str, float]]],
            keys: Sequence[str] = ()) -> dict[str, Leaf]:
    """Per leaf present on both sides (and matching one of ``keys``, if any), from each
    round's (base, head) leaves."""
    names = [name for name in rounds[0][0] if all(name in b and name in h for b, h in rounds)]
    if keys:
        names = [n for n in names if any(fnmatch.fnmatchcase(n, k) for k in keys)]
    return {name: Leaf(statistics.median(b[name] for b, _ in rounds),
                       statistics.median(h[name] for _, h in rounds),
                       [h[name] / b[name] for b, h in rounds if b[name] != 0])
            for name in names}


def markdown(name: str, found: dict[str, Leaf]) -> str:
    lines = [f"A/B of bench.{name}: medians over rounds, head / base the median of the "
             "rounds' ratios", "", "| figure | base | head | head / base |", "|---|---|---|---|"]
    for key, leaf in found.items():
        ratio = "-" if leaf.ratio is None else f"x{leaf.ratio:.3f}"
        lines.append(f"| {key} | {leaf.base:,.6g} | {leaf.head:,.6g} | {ratio} |")
    return "\n".join(lines)


def parser() -> argparse.ArgumentParser:
    made = argparse.ArgumentParser(prog="python -m bench.ab", description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    made.add_argument("name", choices=benchmarks(), metavar="NAME",
                      help=f"the benchmark: {', '.join(benchmarks())}")
    made.add_argument("--base", required=True, help="the base revision")
    made.add_argument("--head", default=THIS,
                      help="the head revision, or '.' for this checkout as it is (default)")
    made.add_argument("--rounds", type=int, default=5, help="rounds (default 5)")
    made.add_argument("--quick", action="store_true", help="run the benchmark with --quick")
    made.add_argument("--keys", nargs="+", default=[], metavar="GLOB",
                      help="report only the leaves matching one of these (fnmatch, dotted)")
    made.add_argument("--out", type=Path, default=None,
                      help="JSON path (default bench/results/ab-NAME.json, "
                           "or ab-NAME-quick.json with --quick)")
    return made


def main(argv: Sequence[str] | None = None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    cut = given.index("--") if "--" in given else len(given)
    args = parser().parse_args(given[:cut])
    command = [sys.executable, "-m", f"bench.{args.name}",
               *(["--quick"] if args.quick else []), *given[cut + 1:]]
    say = cli.progress(time.perf_counter())
    runs: list[dict[str, Any]] = []
    rounds: list[tuple[dict[str, float], dict[str, float]]] = []
    with tempfile.TemporaryDirectory(prefix="threadfold-ab-") as tmp, \
            sides(args.base, args.head, Path(tmp)) as (base, head):
        for side in (base, head):
            if not imports_its_tree(side.tree):
                print(f"bench.ab: {side.name} does not import its tree's threadfold",
                      file=sys.stderr)
                return 1
        for n in range(args.rounds):
            order = (base, head) if n % 2 == 0 else (head, base)
            got: dict[str, dict[str, float]] = {}
            for side in order:
                out, log = Path(tmp, f"{side.name}-{n}.json"), Path(tmp, f"{side.name}-{n}.log")
                try:
                    data, seconds = run_side(side, command, out, log)
                except SideFailed as exc:
                    print(f"bench.ab: {exc}", file=sys.stderr)
                    return 1
                got[side.name] = leaves(data)
                runs.append({"round": n, "side": side.name, "seconds": round(seconds, 1)})
                say(f"round {n + 1}/{args.rounds}: {side.name} in {seconds:.1f} s")
            rounds.append((got["base"], got["head"]))
    found = compare(rounds, args.keys)
    result = {"benchmark": args.name, "command": ["python", *command[1:]],
              "rounds": args.rounds, "keys": args.keys,
              **{s.name: {"rev": s.rev, "commit": s.commit, "changed": s.changed}
                 for s in (base, head)},
              "order": [" ".join(s.name for s in ((base, head) if n % 2 == 0 else (head, base)))
                        for n in range(args.rounds)],
              "runs": runs,
              "leaves": {k: {**asdict(v), "ratio": v.ratio} for k, v in found.items()}}
    return cli.finish(cli.out_path(f"ab-{args.name}", args), result,
                      markdown(args.name, found), [])


if __name__ == "__main__":
    sys.exit(main())

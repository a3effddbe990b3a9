"""What every ``python -m bench.<name>`` shares: its options, progress lines, output."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from bench.common.machine import code_measured, load_average, run_facts

S = TypeVar("S")


class Failed(Protocol):
    """A failed result check, as every benchmark reports it."""

    @property
    def name(self) -> str: ...

    @property
    def detail(self) -> str: ...


def parser(name: str, doc: str | None, quick_help: str) -> argparse.ArgumentParser:
    """``--quick`` and ``--out`` (default ``bench/results/<name>[-quick].json``)."""
    made = argparse.ArgumentParser(prog=f"python -m bench.{name}", description=doc,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    made.add_argument("--quick", action="store_true", help=quick_help)
    made.add_argument("--out", type=Path, default=None,
                      help=f"JSON path (default bench/results/{name}.json, "
                           f"or {name}-quick.json with --quick)")
    return made


def sizes(args: argparse.Namespace, full: S, quick: S) -> tuple[str, S]:
    """The mode's name (as the results file records it) and its sizes."""
    return ("quick", quick) if args.quick else ("full", full)


@dataclass(frozen=True)
class Begun(Generic[S]):
    """A benchmark's start: its options, mode and sizes, and what its report will say
    of the run (the load and the code as they were at the start)."""

    args: argparse.Namespace
    mode: str
    sizes: S
    started: float
    load_before: str
    code: str

    def facts(self) -> dict[str, Any]:
        """The mode and :func:`bench.common.machine.run_facts`, for the JSON's meta."""
        return {"mode": self.mode, **run_facts(self.started, self.load_before, self.code)}


def begin(name: str, doc: str | None, quick_help: str, argv: Sequence[str] | None, *,
          full: S, quick: S,
          options: Callable[[argparse.ArgumentParser], None] | None = None) -> Begun[S]:
    """The command line parsed (:func:`parser`, plus the benchmark's own ``options``),
    the sizes chosen, the clock started."""
    made = parser(name, doc, quick_help)
    if options is not None:
        options(made)
    args = made.parse_args(argv)
    mode, chosen = sizes(args, full, quick)
    started = time.perf_counter()
    return Begun(args, mode, chosen, started, load_average(), code_measured())


def out_path(name: str, args: argparse.Namespace) -> Path:
    given: Path | None = args.out
    return given or Path("bench/results") / f"{name}{'-quick' if args.quick else ''}.json"


def progress(started: float) -> Callable[[str], None]:
    """Timestamped progress lines on stderr (stdout carries the report)."""

    def say(message: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f}s] {message}", file=sys.stderr, flush=True)

    return say


def write(out: Path, data: Any) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=2, default=str) + "\n")


def finish(out: Path, data: Any, report: str, failed: Sequence[Failed]) -> int:
    """Write the JSON, print the report and every failed check; the exit status (1 when
    a check failed: a fast wrong answer is a failure, not a result)."""
    write(out, data)
    print(report)
    for check in failed:
        print(f"CHECK FAILED: {check.name}: {check.detail}", file=sys.stderr)
    return 1 if failed else 0

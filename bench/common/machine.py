"""What a report says about the machine a run ran on."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, as ``/proc/loadavg`` shows them."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def program_version(argv: Sequence[str]) -> str:
    """The first line a ``--version``-style command prints, or ``?``."""
    try:
        out = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    text = out.stdout or out.stderr
    return text.splitlines()[0].strip() if text else "?"


def redis_version() -> str:
    """``7.2.4`` from ``redis-server --version``."""
    words = program_version(["redis-server", "--version"]).split()
    return words[2].removeprefix("v=") if len(words) > 2 else "?"


def code_measured() -> str:
    """The commit measured, and whether the tree had changes besides (a shared tree)."""
    def git(*argv: str) -> str:
        done = subprocess.run(["git", *argv], capture_output=True, text=True, check=False)
        return done.stdout.strip()

    changed = [line for line in git("status", "--porcelain").splitlines() if line]
    return git("rev-parse", "--short", "HEAD") + (
        f" with {len(changed)} uncommitted file(s)" if changed else "")


def run_facts(started: float, load_before: str, code: str) -> dict[str, Any]:
    """What every report's meta says of the run and the machine: its seconds (from
    ``started``, a ``time.perf_counter()``), the load before and now, cores, Python,
    platform, Redis, and the code measured (:func:`code_measured`, taken at the start)."""
    return {"seconds": time.perf_counter() - started,
            "load_before_after": f"{load_before} / {load_average()}",
            "cores": os.cpu_count(), "python": sys.version.split()[0],
            "platform": platform.platform(), "redis": redis_version(), "code": code}

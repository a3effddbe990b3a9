"""What a report says about the machine a run ran on."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence


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

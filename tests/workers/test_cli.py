"""The ``threadfold`` command: the whole local stack, its demo, and its refusals."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.workers.harness import ROOT

THREADFOLD = str(Path(sys.executable).with_name("threadfold"))


def _run(
    args: list[str], cwd: Path, env: dict[str, str], timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [THREADFOLD, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _clean_env() -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("THREADFOLD_") and k != "REDIS_URL"
    }
    env["PYTHONPATH"] = str(ROOT)
    return env


def test_up_starts_the_whole_stack_runs_the_demo_and_stops_cleanly(tmp_path: Path) -> None:
    done = _run(["up", "--demo", "--exit", "--port", "0", "--workers", "1"], tmp_path, _clean_env())
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "a private redis-server" in out and "API       http://127.0.0.1:" in out
    assert "Merged state of thread 'demo'" in out
    assert "Pack an umbrella for Rome." in out and "scratch" not in out.split("Merged state")[1]
    assert (tmp_path / ".threadfold" / "redis" / "appendonly.aof").exists() or any(
        (tmp_path / ".threadfold" / "redis").iterdir()
    )
    leftover = subprocess.run(
        ["pgrep", "-f", str(tmp_path)], capture_output=True, text=True, check=False
    )
    assert leftover.stdout.strip() == "", f"processes left running: {leftover.stdout}"


def test_up_without_redis_server_says_how_to_get_one(tmp_path: Path) -> None:
    env = _clean_env()
    env["PATH"] = str(Path(sys.executable).parent)  # our interpreter, and no redis-server
    done = _run(["up", "--exit", "--port", "0"], tmp_path, env, timeout=60)
    assert done.returncode == 2
    assert "redis-server was not found" in done.stderr
    assert "apt-get install redis-server" in done.stderr and "REDIS_URL" in done.stderr


def test_recompute_without_a_selection_is_refused(tmp_path: Path) -> None:
    done = _run(["recompute", "--audit"], tmp_path, _clean_env(), timeout=60)
    assert done.returncode == 2
    assert "choose threads: --threads, --prefix, --tenant or --all" in done.stderr


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--threads", "a", "--prefix", "p"], "--threads names the threads itself"),
        (["--threads", "a", "--tenant", "t"], "--threads names the threads itself"),
        (["--threads", "a", "--all"], "--threads names the threads itself"),
        (["--all", "--prefix", "p"], "--all selects every thread"),
        (["--dry-run", "--all"], "--dry-run goes with --rebuild"),
        (["--threads", "no spaces"], "--threads: thread id must be"),
    ],
)
def test_recompute_refuses_conflicting_or_bad_selectors(
    tmp_path: Path, args: list[str], said: str
) -> None:
    # `--threads X --prefix Y` ignored the prefix; now nothing is sent and it says why.
    done = _run(["recompute", "--audit", *args], tmp_path, _clean_env(), timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    assert said in done.stderr and done.stdout == ""

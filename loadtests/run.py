"""Running the load test headless against any deployment: Locust as a child process.

A child process, not Locust in-process: Locust monkey-patches the standard library with
gevent at import, which the caller (a CLI that has just started a stack, or pytest)
must not inherit.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

log = logging.getLogger("threadfold.loadtests.run")
LOCUSTFILE = Path(__file__).with_name("locustfile.py")
STOP_TIMEOUT_S = 10  # users finish the task in hand, so few writes are left unanswered
TIMED_OUT = 124  # the exit code timeout(1) uses
_MARGIN_S = 120  # startup, the check and the reports, on a slow machine
_GRACE_S = 60


def locust_command(
    host: str,
    users: int,
    spawn_rate: float,
    duration_s: int,
    out_dir: Path,
    *,
    extra_args: Sequence[str] = (),
) -> list[str]:
    """The ``locust`` command line: headless, CSV and HTML reports, check summary."""
    return [
        sys.executable, "-m", "locust",
        "-f", str(LOCUSTFILE),
        "--headless",
        "--host", host,
        "-u", str(users),
        "-r", str(spawn_rate),
        "-t", f"{duration_s}s",
        "--stop-timeout", str(STOP_TIMEOUT_S),
        "--csv", str(out_dir / "stats"),
        "--html", str(out_dir / "report.html"),
        "--exit-code-on-error", "1",
        "--check-summary", str(out_dir / "check.json"),
        *extra_args,
    ]  # fmt: skip


def child_env(extra_env: Mapping[str, str] | None) -> dict[str, str]:
    """This environment, ``extra_env`` on top, and the project importable by the child."""
    env = {**os.environ, **(extra_env or {})}
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    return env


# Locust's run parameters, by name, as its command line takes them.
def run_loadtest(  # noqa: PLR0913
    host: str,
    users: int,
    spawn_rate: float,
    duration_s: int,
    out_dir: Path,
    *,
    extra_env: Mapping[str, str] | None = None,
    extra_args: Sequence[str] = (),
    log_path: Path | None = None,
) -> int:
    """Run Locust headless; its exit code (0: no failed request and the check passed).

    Reports land in ``out_dir``: ``stats_*.csv``, ``report.html`` and ``check.json``;
    Locust's output goes to ``log_path`` when given, else to this process's output.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    command = locust_command(host, users, spawn_rate, duration_s, out_dir, extra_args=extra_args)
    log.info("running %s", " ".join(command))
    timeout = duration_s + STOP_TIMEOUT_S + _MARGIN_S
    env = child_env(extra_env)
    if log_path is None:
        return _run(command, env, timeout, None)
    with log_path.open("w") as output:
        return _run(command, env, timeout, output)


def _run(command: list[str], env: dict[str, str], timeout: float, output: IO[str] | None) -> int:
    errors = None if output is None else subprocess.STDOUT
    # S603: our own interpreter and arguments, no shell.
    with subprocess.Popen(command, env=env, stdout=output, stderr=errors) as process:  # noqa: S603
        try:
            return process.wait(timeout)
        except subprocess.TimeoutExpired:
            log.error("locust did not finish within %d s; stopping it", timeout)
        # SIGTERM first: the locustfile turns it into a stop that still checks and reports.
        process.terminate()
        try:
            process.wait(_GRACE_S)
        except subprocess.TimeoutExpired:
            process.kill()
        return TIMED_OUT

"""A group of supervised processes: started with their environment and a log file each,
restarted when they exit, stopped in reverse order.

Each member runs as a `ManagedProcess` (its own process group, killed with its owner).
`ProcessGroup.supervise` starts again, with the same command line, each member that has
exited; one that keeps exiting (``MAX_RESTARTS`` times within ``RESTART_WINDOW_SECONDS``)
or does not come back ready raises `CrashLoop` instead: restarting it again would hide
a failure behind a loop. `ProcessGroup.stop` sends SIGTERM to every member's process
group, last started first (the API before the workers before Redis), waits a grace
period for all of them, then SIGKILLs what is left.
"""

from __future__ import annotations

import contextlib
import signal
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from threadfold.workers.ops.processes.child import ManagedProcess, wait_until
from threadfold.workers.ops.processes.errors import CrashLoop, ServiceStartError

# A member that exits this often within the window is failing, not crashing once.
MAX_RESTARTS = 5
RESTART_WINDOW_SECONDS = 60.0
RESTART_READY_SECONDS = 60.0
STOP_GRACE_SECONDS = 15.0
_LOG_TAIL = 2000


@dataclass
class Member:
    """One supervised process and what restarting it needs."""

    name: str
    argv: list[str]
    env: dict[str, str]
    log: Path
    process: ManagedProcess
    #: answers True once a (re)started process serves (None: started is enough)
    ready: Callable[[], bool] | None = None
    #: what a restart keeps, for the message that reports it
    keeps: str = ""
    restarts: list[float] = field(default_factory=list)

    @property
    def pid(self) -> int:
        return self.process.pid

    def exit_code(self) -> int | None:
        """The exit status once the process has exited (reaping it), else None."""
        if self.process.alive:
            return None
        return self.process.kill()  # kills what the leader left of its group, and reaps

    def log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-_LOG_TAIL:]


@dataclass
class ProcessGroup:
    """Processes started with ``env`` (over the inherited environment), logging to
    ``log_dir/<name>.log``."""

    log_dir: Path
    env: dict[str, str] = field(default_factory=dict)
    members: list[Member] = field(default_factory=list)

    def spawn(
        self,
        name: str,
        argv: list[str],
        extra: Mapping[str, str] | None = None,
        *,
        ready: Callable[[], bool] | None = None,
        keeps: str = "",
    ) -> Member:
        """Start ``argv`` as member ``name`` (``extra`` over the group's env)."""
        log = self.log_dir / f"{name}.log"
        env = {**self.env, **(extra or {})}
        member = Member(name, argv, env, log, _start(argv, env, log), ready, keeps)
        self.members.append(member)
        return member

    def wait_ready(self, check: Callable[[], object], what: str, timeout: float = 30.0) -> None:
        """Until ``check`` holds; raises ServiceStartError at once if a member exits."""

        def ready() -> object:
            self.check_alive()
            return check()

        try:
            wait_until(ready, timeout, interval=0.1, message=what)
        except TimeoutError:
            raise ServiceStartError(
                f"{what} did not become ready within {timeout:g} s (logs: {self.log_dir})"
            ) from None

    def check_alive(self) -> None:
        """Raises ServiceStartError naming the first member that has exited, with its log."""
        for member in self.members:
            code = member.exit_code()
            if code is not None:
                raise ServiceStartError(f"{member.name} exited ({code}); log:\n{member.log_tail()}")

    def supervise(self, say: Callable[[str], None]) -> None:
        """Start again each member that has exited, and ``say`` so.

        Raises CrashLoop when one has exited more than ``MAX_RESTARTS`` times within
        ``RESTART_WINDOW_SECONDS``, or a restarted one does not become ready."""
        for member in self.members:
            code = member.exit_code()
            if code is not None:
                _restart(member, code, say)

    def stop(self, grace: float = STOP_GRACE_SECONDS) -> None:
        """SIGTERM to each member's process group, last started first; SIGKILL to what is
        left after ``grace`` seconds."""
        for member in reversed(self.members):
            with contextlib.suppress(ProcessLookupError):
                member.process.send_signal(signal.SIGTERM, group=True)
        deadline = time.monotonic() + grace
        for member in reversed(self.members):
            with contextlib.suppress(TimeoutError):
                member.process.wait_for_exit(max(0.1, deadline - time.monotonic()))
            member.process.kill()


def _start(argv: list[str], env: dict[str, str], log: Path) -> ManagedProcess:
    return ManagedProcess(argv, log_path=log, env=env)


def _restart(member: Member, code: int, say: Callable[[str], None]) -> None:
    now = time.monotonic()
    member.restarts = [t for t in member.restarts if now - t < RESTART_WINDOW_SECONDS]
    if len(member.restarts) >= MAX_RESTARTS:
        raise CrashLoop(
            f"{member.name} exited ({describe_exit(code)}) {len(member.restarts) + 1} times "
            f"within {RESTART_WINDOW_SECONDS:g} s; log:\n{member.log_tail()}"
        )
    member.restarts.append(now)
    old = member.pid
    member.process = _start(member.argv, member.env, member.log)
    if not _back(member):
        return  # exited again: the next call counts it
    say(
        f"threadfold: {member.name} (pid {old}) exited ({describe_exit(code)}); restarted it "
        f"as pid {member.pid}{member.keeps}"
    )


def _back(member: Member) -> bool:
    """Whether the restarted member became ready (False: it exited again meanwhile)."""
    check = member.ready
    if check is None:
        return True
    process = member.process
    try:
        wait_until(lambda: not process.alive or check(), RESTART_READY_SECONDS, interval=0.1)
    except TimeoutError:
        raise CrashLoop(
            f"{member.name} did not become ready within {RESTART_READY_SECONDS:g} s "
            f"of a restart (log: {member.log})"
        ) from None
    return process.alive


def describe_exit(code: int) -> str:
    """``exit status 3``, or ``killed by SIGKILL`` for a negative status."""
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-code).name}"
    return f"exit status {code}"

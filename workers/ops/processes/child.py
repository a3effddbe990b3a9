"""Child processes that cannot outlive their owner, free ports, and the one way to wait.

A `ManagedProcess` runs in its own process group, so killing it kills everything it
spawned (a Celery worker's pool, a shell's children). It is killed when it is closed,
when it is garbage-collected, at interpreter exit (`weakref.finalize` covers both), and,
on Linux, by the kernel when the process that started it dies (`PR_SET_PDEATHSIG`), so a
run killed with SIGKILL (a test session, ``threadfold up``) still leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Self

from threadfold.workers.ops.processes.errors import ExecutableNotFoundError

_PR_SET_PDEATHSIG = 1

HOST = "127.0.0.1"
CLUSTER_BUS_OFFSET = 10000
_MAX_PORT = 65535
_PORT_ATTEMPTS = 200


def free_port(*, cluster_bus: bool = False) -> int:
    """A loopback port nothing is bound to right now.

    With `cluster_bus`, port + 10000 (where a Redis Cluster node listens for its peers) is
    free too. The port is released before returning, so another process can still take
    it; services started on it retry with a fresh port when that race is lost.
    """
    for _ in range(_PORT_ATTEMPTS):
        port = _bind_and_release(0)
        if not cluster_bus or _is_free(port + CLUSTER_BUS_OFFSET):
            return port
    raise OSError(f"no free loopback port found in {_PORT_ATTEMPTS} attempts")


def _is_free(port: int) -> bool:
    if port > _MAX_PORT:
        return False
    try:
        _bind_and_release(port)
    except OSError:
        return False
    return True


def _bind_and_release(port: int) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, port))
        bound: int = sock.getsockname()[1]
        return bound


def wait_until(
    predicate: Callable[[], object],
    timeout: float,
    interval: float = 0.02,
    message: str = "condition not met",
    *,
    ignore: tuple[type[BaseException], ...] = (),
) -> None:
    """Poll `predicate` until it returns something truthy, or raise `TimeoutError(message)`.

    Exceptions of the `ignore` types count as "not yet"; the last one becomes the
    `__cause__` of the `TimeoutError`, so a service that never came up says why.
    """
    deadline = time.monotonic() + timeout
    last_error: BaseException | None = None
    while True:
        try:
            if predicate():
                return
        except ignore as error:
            last_error = error
        if time.monotonic() >= deadline:
            raise TimeoutError(f"{message} (waited {timeout:g}s)") from last_error
        time.sleep(interval)


def find_executable(name: str, hint: str = "") -> str:
    """The full path of `name` on PATH, or a clear error naming the missing service
    (and ``hint``: what the reader can do about it)."""
    found = shutil.which(name)
    if found is None:
        raise ExecutableNotFoundError(f"{name} was not found: it is not on PATH. {hint}".strip())
    return found


def pid_alive(pid: int) -> bool:
    """Whether `pid` names a running process; a zombie counts as gone."""
    if not Path("/proc/self/stat").exists():
        return _pid_signalable(pid)
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return fields[0] not in {"Z", "X"}


def _pid_signalable(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class ManagedProcess:
    """A command running as a child in its own process group, logging to `log_path`.

    `env` overrides the inherited environment; a value of `None` removes the variable.
    Starts on construction, like `subprocess.Popen`. The group leader's pid is `pid`.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        log_path: Path,
        env: Mapping[str, str | None] | None = None,
        cwd: Path | None = None,
        die_with_parent: bool = True,
    ) -> None:
        self.argv = list(argv)
        self.log_path = log_path
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self._popen = _spawn(self.argv, log_path, _environment(env), cwd, die_with_parent)
        self._reaper = weakref.finalize(self, _kill_group_and_reap, self._popen)

    @property
    def pid(self) -> int:
        return self._popen.pid

    @property
    def alive(self) -> bool:
        return not _leader_exited(self._popen)

    @property
    def returncode(self) -> int | None:
        """The exit status once reaped; negative means killed by that signal."""
        return self._popen.returncode

    def send_signal(self, sig: signal.Signals, *, group: bool = False) -> None:
        """Send `sig` to the leader (as a process manager would), or to the whole group."""
        if not _leader_exited(self._popen):
            (os.killpg if group else os.kill)(self._popen.pid, sig)

    def kill(self) -> int:
        """SIGKILL the whole process group and reap the leader; returns its exit status."""
        self._reaper()
        return self._popen.wait()

    def terminate(self, timeout: float = 5.0) -> int:
        """SIGTERM the leader; after `timeout`, SIGKILL whatever of the group is left."""
        self.send_signal(signal.SIGTERM)
        with contextlib.suppress(TimeoutError):
            self.wait_for_exit(timeout)
        return self.kill()

    def wait(self, timeout: float) -> int:
        """Wait for the leader to exit by itself, then kill its leftovers and reap it."""
        self.wait_for_exit(timeout)
        return self.kill()

    def wait_for_exit(self, timeout: float) -> None:
        """Wait for the leader to exit, without reaping it (its pid keeps the group safe)."""
        wait_until(
            lambda: _leader_exited(self._popen),
            timeout,
            interval=0.01,
            message=f"{self.argv[0]} (pid {self.pid}) did not exit",
        )

    def read_log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.terminate()

    def __repr__(self) -> str:
        state = "alive" if self.alive else f"exited {self.returncode}"
        return f"<ManagedProcess pid={self.pid} {state} {' '.join(self.argv)!r}>"


def _environment(overrides: Mapping[str, str | None] | None) -> dict[str, str]:
    env = dict(os.environ)
    for name, value in (overrides or {}).items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def _spawn(
    argv: list[str], log_path: Path, env: dict[str, str], cwd: Path | None, die_with_parent: bool
) -> subprocess.Popen[bytes]:
    # The parent's handle on the log is closed as soon as the child holds its own copy.
    with log_path.open("ab") as log:
        try:
            return subprocess.Popen(  # noqa: S603  # our own commands, never a user's string
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=cwd,
                start_new_session=True,
                # The hook only makes one prctl call, resolved before the fork, so the
                # usual hazard of running Python between fork and exec is kept minimal.
                preexec_fn=_pdeathsig_setter() if die_with_parent else None,  # noqa: PLW1509
            )
        except FileNotFoundError as error:
            raise ExecutableNotFoundError(
                f"cannot run {argv[0]!r} (cwd={cwd}): {error.strerror}"
            ) from error


@functools.cache
def _pdeathsig_setter() -> Callable[[], None] | None:
    """A pre-exec hook asking the kernel to SIGKILL the child when its parent dies.

    The kernel ties this to the *thread* that forked: start long-lived children from a
    thread that outlives them (pytest's main thread does). Linux only; elsewhere None.
    """
    if not sys.platform.startswith("linux"):
        return None
    library = ctypes.util.find_library("c")
    if library is None:
        return None
    # Resolved here, in the parent, so the forked child only makes the call.
    prctl = ctypes.CDLL(library, use_errno=True).prctl

    def set_pdeathsig() -> None:
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL))

    return set_pdeathsig


def _leader_exited(popen: subprocess.Popen[bytes]) -> bool:
    """Whether the leader has exited, peeking without reaping (WNOWAIT).

    Until it is reaped, its pid cannot be reused, so signalling its group stays safe.
    """
    if popen.returncode is not None:
        return True
    try:
        state = os.waitid(os.P_PID, popen.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return popen.poll() is not None
    return state is not None


def _kill_group_and_reap(popen: subprocess.Popen[bytes]) -> None:
    if popen.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(popen.pid, signal.SIGKILL)
    popen.wait()

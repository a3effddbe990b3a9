"""A ``redis-server`` whose work is counted in instructions, under Valgrind's callgrind.

CPU time on a shared two-core machine moves by more than the few percent a change to a
script is worth; the instructions the server runs for the same requests do not (three
runs of the spread bulk agree to 0.01%). :class:`CountedRedis` runs ``redis-server``
under ``valgrind --tool=callgrind`` (about fifty times slower, so a path is measured on
fewer deltas), and :meth:`CountedRedis.count` zeroes the counters before a block and
dumps them after it (``callgrind_control``), so what is read is the block's alone: the
server's whole work, commands, Lua and allocator included, for the requests the block
sent and waited for. The server's timer runs once a second (``hz 1``, from ten): its
work is by the clock, and a block under callgrind takes fifty times as long.

Needs ``valgrind`` (Debian's package); :func:`available` says whether it is here.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

import redis

from threadfold.workers.ops.processes.child import HOST, free_port

#: How long the server may take to answer under callgrind (it starts ~50x slower).
START_SECONDS: Final = 60.0
_TOTAL: Final = re.compile(rb"^(?:summary|totals): (\d+)", re.MULTILINE)


def available() -> bool:
    return shutil.which("valgrind") is not None and shutil.which("callgrind_control") is not None


class CountedRedis:
    """A private ``redis-server`` (no persistence) under callgrind; a context manager."""

    def __init__(self) -> None:
        self._dir = Path(tempfile.mkdtemp(prefix="threadfold-callgrind-"))
        self.port = free_port()
        self.url = f"redis://{HOST}:{self.port}/0"
        self._proc = subprocess.Popen(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={self._dir}/cg.%p",
             "redis-server", "--port", str(self.port), "--bind", HOST, "--save", "",
             "--appendonly", "no", "--dir", str(self._dir), "--hz", "1"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        client = redis.Redis.from_url(self.url)
        deadline = time.monotonic() + START_SECONDS
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if self._proc.poll() is not None or time.monotonic() > deadline:
                    self.close()
                    raise RuntimeError("redis-server under callgrind did not start") from None
                time.sleep(0.1)
            finally:
                client.close()
        self._dumps = 0

    def _control(self, *args: str) -> None:
        subprocess.run(["callgrind_control", *args, str(self._proc.pid)], check=True,
                       capture_output=True, timeout=120)

    @contextmanager
    def count(self, into: list[int]) -> Iterator[None]:
        """The instructions the server runs during the block, appended to ``into``."""
        self._control("--zero")
        yield
        self._control("--dump")
        self._dumps += 1
        dump = self._dir / f"cg.{self._proc.pid}.{self._dumps}"
        found = _TOTAL.search(dump.read_bytes())
        if found is None:
            raise RuntimeError(f"callgrind's dump {dump.name} holds no total")
        into.append(int(found.group(1)))

    def close(self) -> None:
        self._proc.terminate()
        try:
            self._proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> CountedRedis:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

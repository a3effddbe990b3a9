"""Where an API process spends its time under load: py-spy samples, grouped.

py-spy samples the process with ``--gil`` (only threads holding the GIL, i.e. running
Python: on a CPU-bound asyncio server that is where its CPU goes), ``--native`` (so time
inside msgspec, hiredis or uvloop shows as their own frames) and ``--threads`` (to tell
the event loop from the thread that publishes Celery wake-ups). Each sample is charged
to the first frame, from the leaf up, that belongs to a named group: a sample inside
msgspec called by ``threadfold.core.codec`` is msgspec's, one in ``threadfold.core.convert`` called
by the producer is core's. Generic frames (the interpreter, libc, asyncio streams, typing,
contextlib...) are passed over, so a socket write made by redis-py is redis-py's; a
sample with no named frame at all is the event loop's if it is under it, else "other".
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

INSTALL_HINT = ".venv/bin/pip install py-spy"
#: The checkout (frames of our files are shown relative to it).
_PROJECT = str(Path(__file__).resolve().parents[2])
EVENT_LOOP = "event loop + scheduling (uvloop, asyncio)"
OTHER = "other (interpreter, unresolved)"


def _in(*paths: str) -> Callable[[str], bool]:
    """Frames of these files or packages (py-spy prints paths relative to sys.path)."""
    return lambda frame: any(f"({p}" in frame for p in paths)


#: (group, test on one frame), tried in order on each frame from the leaf up.
GROUPS: list[tuple[str, Callable[[str], bool]]] = [
    ("garbage collector", lambda f: "gc_collect" in f),
    ("msgspec (JSON decode/encode, msgpack)", lambda f: "msgspec" in f),
    ("redis-py client (pack, parse, socket I/O)", lambda f: "(redis/" in f or "hiredis" in f),
    ("Celery/kombu wake-up publish", _in("celery/", "kombu/", "amqp/", "vine/",
                                         "workers/runtime/app.py", "workers/ingest/wakeup.py")),
    ("uuid4 (stdlib)", _in("uuid.py")),
    ("core: validate, convert, stamp ids, encode", _in("core/")),
    ("producer + store glue (threadfold.workers.ingest.producer/storage/redisio)",
     _in("workers/ingest/producer.py", "workers/storage/", "workers/redisio/client.py",
     "workers/storage/astore.py")),
    ("metrics (threadfold.workers.metrics)", _in("workers/metrics.py")),
    ("API handlers + service (api.*)", _in("api/")),
    ("Starlette", _in("starlette/")),
    # uvicorn's protocol (not its server frames, which are the root of every stack)
    ("uvicorn HTTP protocol + httptools", lambda f: "(uvicorn/protocols/" in f
     or "httptools" in f),
    ("GIL / lock wait", lambda f: "pthread_cond_timedwait" in f or "take_gil" in f),
]
_LOOP = _in("asyncio/", "concurrent/futures/", "threading.py")


def pyspy_path() -> str | None:
    beside = Path(sys.executable).with_name("py-spy")
    return str(beside) if beside.exists() else shutil.which("py-spy")


@dataclass(frozen=True)
class Profile:
    """Samples per group and the hottest leaf frames, as shares of all samples."""

    what: str
    samples: int
    groups: list[tuple[str, int]]
    threads: list[tuple[str, int]]
    leaves: list[tuple[str, int]]
    native: bool
    rate: int = 0
    seconds: float = 0.0
    error: str = ""

    def share(self, n: int) -> float:
        return n / self.samples if self.samples else 0.0

    def busy(self, n: int) -> float:
        """A thread's samples as a share of the sampling period (it held the GIL then)."""
        expected = self.rate * self.seconds
        return n / expected if expected else 0.0

    def to_json(self) -> dict[str, Any]:
        return {"what": self.what, "samples": self.samples, "native": self.native,
                "rate_hz": self.rate, "seconds": self.seconds, "error": self.error,
                "groups": [{"group": g, "samples": n, "share": self.share(n)}
                           for g, n in self.groups],
                "threads": [{"thread": t, "samples": n, "share": self.share(n),
                             "gil_held_share_of_time": self.busy(n)} for t, n in self.threads],
                "top_leaves": [{"frame": f, "samples": n, "share": self.share(n)}
                               for f, n in self.leaves]}


_ROOTS = ("(asyncio/runners.py", "(concurrent/futures/thread.py")


def group_of(frames: Sequence[str]) -> str:
    """The group of one sample (its frames root first)."""
    # The frames above the event loop's run (or an executor thread's work loop) only
    # start the process: python -m threadfold.api -> uvicorn.run -> asyncio.run.
    roots = [i for i, f in enumerate(frames) if any(r in f for r in _ROOTS)]
    work = frames[roots[-1] + 1 :] if roots else frames
    for frame in reversed(work):
        for name, test in GROUPS:
            if test(frame):
                return name
    return EVENT_LOOP if roots or any(_LOOP(f) or "uvloop" in f for f in frames) else OTHER


def _short(frame: str) -> str:
    return frame.replace(_PROJECT + "/", "").replace(sys.prefix + "/", "")


def _hot_frame(frames: Sequence[str]) -> str:
    """The innermost Python frame (file:line) of a sample, after the native leaf if any:
    ``write (libc.so.6) in StreamWriter.writelines (asyncio/streams.py:346)``."""
    python = next((f for f in reversed(frames) if ".py:" in f), "")
    leaf = frames[-1] if frames else "?"
    if not python or leaf == python:
        return _short(leaf or python)
    if leaf.startswith("0x") or "msgspec" in python:
        return _short(python)
    return f"{_short(leaf)} in {_short(python)}"


def parse(raw: str, what: str, native: bool, *, rate: int = 0, seconds: float = 0.0,
          top: int = 15) -> Profile:
    """py-spy's ``--format raw`` output (``thread (tid): name;f1;f2;... count``)."""
    groups: Counter[str] = Counter()
    threads: Counter[str] = Counter()
    leaves: Counter[str] = Counter()
    total = 0
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        frames = stack.split(";")
        thread = "?"
        if frames and frames[0].startswith("thread ("):
            thread = frames[0].split(": ", 1)[-1]
            frames = frames[1:]
        total += n
        threads["MainThread (event loop)" if thread == "MainThread" else
                "executor threads (to_thread: Celery publish)"] += n
        groups[group_of(frames)] += n
        leaves[_hot_frame(frames)] += n
    return Profile(what, total, groups.most_common(), threads.most_common(),
                   leaves.most_common(top), native, rate, seconds)


def record(pid: int, seconds: float, out: Path, rate: int = 250,
           native: bool = True) -> subprocess.Popen[bytes]:
    """Start py-spy on ``pid`` for ``seconds``; wait on the returned process."""
    spy = pyspy_path()
    if spy is None:
        raise RuntimeError(f"py-spy is not installed: `{INSTALL_HINT}`")
    argv = [spy, "record", "--pid", str(pid), "--duration", str(max(int(seconds), 1)),
            "--rate", str(rate), "--format", "raw", "--threads", "--gil", "-o", str(out)]
    argv.append("--native" if native else "--nonblocking")
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def profile_during(pid: int, seconds: int, out: Path, load: Callable[[float], object],
                   what: str, *, rate: int = 250) -> Profile:
    """Sample ``pid`` while ``load(seconds)`` runs; falls back to non-native sampling."""
    error = ""
    for native in (True, False):
        spy = record(pid, seconds, out, rate=rate, native=native)
        time.sleep(0.5)  # attached before the load starts
        load(seconds + 1)
        _, err = spy.communicate(timeout=seconds + 60)
        if spy.returncode == 0 and out.exists():
            return parse(out.read_text(), what, native, rate=rate, seconds=seconds)
        error = err.decode(errors="replace")[-500:]
    return Profile(what, 0, [], [], [], False, error=f"py-spy failed: {error}")

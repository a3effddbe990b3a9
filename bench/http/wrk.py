"""wrk as the load generator: Lua scripts for POST bodies and spread paths, parsed results.

wrk is a closed-loop generator (each connection sends its next request when the last
answer arrives), so its runs measure the most requests per second at a given number of
connections, and their latencies are those of a saturated server. Fixed-rate latency
comes from :mod:`bench.http.paced` instead.

Every script ends in the same ``done()``, which prints one ``WRKJSON {...}`` line: the
summary, socket errors and latency percentiles in microseconds. wrk's own CPU time is
read from the kernel (``wait4``) when it exits, since it competes with the server for
the same cores.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

INSTALL_HINT = "apt-get install wrk"

#: The message every POST carries (ids are stamped by the server, so each is new).
MESSAGE = '{"role":"user","content":"hello from wrk: a short user message of about sixty bytes"}'


class WrkMissingError(RuntimeError):
    """wrk is not installed."""


def wrk_path() -> str | None:
    return shutil.which("wrk")


def require_wrk() -> str:
    """wrk's path, or an error that says how to install it."""
    found = wrk_path()
    if found is None:
        raise WrkMissingError(
            f"wrk is not installed (the HTTP benchmark's load generator): `{INSTALL_HINT}`"
        )
    return found


# Each wrk thread has its own Lua state: setup() numbers the threads so that their
# request sequences interleave (thread k sends k, k + T, k + 2T, ...) without repeats.
_SETUP = """
local thread_count = 0
function setup(thread)
  thread:set("tindex", thread_count)
  thread_count = thread_count + 1
end
"""

_DONE = """
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRKJSON {"requests":%d,"duration_us":%d,"bytes":%d,"connect":%d,"read":%d,' ..
    '"write":%d,"status":%d,"timeout":%d,"p50":%d,"p90":%d,"p99":%d,"p999":%d,' ..
    '"max":%d,"mean":%.1f}\\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write,
    e.status, e.timeout, latency:percentile(50), latency:percentile(90),
    latency:percentile(99), latency:percentile(99.9), latency.max, latency.mean))
end
"""

HEALTHZ = _SETUP + _DONE

#: args: ids prefix threads. POST /threads/<prefix><i mod ids>/deltas, one message.
POST_ONE = (
    _SETUP
    + f"""
local body = '{{"messages":[{MESSAGE}]}}'
function init(args)
  ids = tonumber(args[1]); prefix = args[2]; step = tonumber(args[3]); n = tindex
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.body = body
end
function request()
  local path = "/threads/" .. prefix .. (n % ids) .. "/deltas"
  n = n + step
  return wrk.format(nil, path)
end
"""
    + _DONE
)

#: args: ids prefix threads. GET /threads/<prefix><i mod ids>/state.
GET_STATE = (
    _SETUP
    + """
function init(args)
  ids = tonumber(args[1]); prefix = args[2]; step = tonumber(args[3]); n = tindex
end
function request()
  local path = "/threads/" .. prefix .. (n % ids) .. "/state"
  n = n + step
  return wrk.format("GET", path)
end
"""
    + _DONE
)

#: args: threads per_request prefix bodies wrk_threads. POST /deltas: body b holds one
#: delta for each of threads b*per .. b*per+per-1 (mod threads); bodies are built once.
POST_BULK = (
    _SETUP
    + f"""
local message = '{MESSAGE}'
function init(args)
  local threads = tonumber(args[1]); local per = tonumber(args[2]); local prefix = args[3]
  nbodies = tonumber(args[4]); step = tonumber(args[5]); n = tindex
  bodies = {{}}
  for b = 0, nbodies - 1 do
    local parts = {{}}
    for j = 0, per - 1 do
      local t = (b * per + j) % threads
      parts[#parts + 1] = '{{"thread_id":"' .. prefix .. t .. '","messages":[' .. message .. ']}}'
    end
    bodies[b + 1] = '{{"deltas":[' .. table.concat(parts, ",") .. ']}}'
  end
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
end
function request()
  local body = bodies[(n % nbodies) + 1]
  n = n + step
  return wrk.format(nil, "/deltas", nil, body)
end
"""
    + _DONE
)

SCRIPTS = {"healthz": HEALTHZ, "post_one": POST_ONE, "get_state": GET_STATE,
           "post_bulk": POST_BULK}


def write_scripts(directory: Path) -> dict[str, Path]:
    """Every script as a file in ``directory``; name -> path."""
    paths = {}
    for name, text in SCRIPTS.items():
        path = directory / f"{name}.lua"
        path.write_text(text)
        paths[name] = path
    return paths


@dataclass(frozen=True)
class WrkResult:
    """One wrk run. Latencies in milliseconds; ``cpu_s`` is wrk's own user + system time."""

    requests: int
    seconds: float
    bytes: int
    socket_errors: dict[str, int]
    non_2xx: int
    p50_ms: float
    p90_ms: float
    p99_ms: float
    p999_ms: float
    max_ms: float
    mean_ms: float
    cpu_s: float
    connections: int
    threads: int

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    @property
    def ok(self) -> bool:
        return self.non_2xx == 0 and not any(self.socket_errors.values())

    @property
    def cpu_share(self) -> float:
        """wrk's CPU as a share of one core over the run."""
        return self.cpu_s / self.seconds if self.seconds else 0.0


def parse_output(stdout: str, cpu_s: float, connections: int, threads: int) -> WrkResult:
    """The ``WRKJSON`` line of a run's output."""
    for line in stdout.splitlines():
        if line.startswith("WRKJSON "):
            raw: dict[str, Any] = json.loads(line.removeprefix("WRKJSON "))
            return WrkResult(
                requests=int(raw["requests"]),
                seconds=raw["duration_us"] / 1e6,
                bytes=int(raw["bytes"]),
                socket_errors={k: int(raw[k]) for k in ("connect", "read", "write", "timeout")},
                non_2xx=int(raw["status"]),
                p50_ms=raw["p50"] / 1000, p90_ms=raw["p90"] / 1000, p99_ms=raw["p99"] / 1000,
                p999_ms=raw["p999"] / 1000, max_ms=raw["max"] / 1000,
                mean_ms=float(raw["mean"]) / 1000, cpu_s=cpu_s,
                connections=connections, threads=threads,
            )
    raise RuntimeError(f"wrk printed no result line; its output:\n{stdout[-2000:]}")


def run_child(argv: Sequence[str], timeout: float) -> tuple[int, str, float]:
    """Run ``argv`` to the end: exit status, stdout, and its CPU seconds (from ``wait4``)."""
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
        try:
            _, status, usage = _wait4(proc.pid, timeout)
        except TimeoutError:
            proc.kill()
            proc.wait()
            raise
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode(errors="replace")
    return proc.returncode, text, usage.ru_utime + usage.ru_stime


def _wait4(pid: int, timeout: float) -> tuple[int, int, Any]:
    deadline = time.monotonic() + timeout
    while True:
        got, status, usage = os.wait4(pid, os.WNOHANG)
        if got == pid:
            return got, status, usage
        if time.monotonic() > deadline:
            raise TimeoutError(f"pid {pid} still running after {timeout:g}s")
        time.sleep(0.02)


def pinned(argv: Sequence[str], cpus: str | None) -> list[str]:
    """``argv`` run on ``cpus`` (a taskset list such as ``"1"``), or as is."""
    return ["taskset", "-c", cpus, *argv] if cpus else list(argv)


def run_wrk(url: str, *, script: Path, args: Sequence[str] = (), seconds: float,
            connections: int, threads: int = 1, cpus: str | None = None,
            timeout_s: float = 10.0) -> WrkResult:
    """One wrk run against ``url`` with one of :data:`SCRIPTS` (it prints the result)."""
    argv = [require_wrk(), f"-t{threads}", f"-c{connections}", f"-d{seconds:g}s",
            f"--timeout={timeout_s:g}s", "-s", str(script), url]
    if args:
        argv += ["--", *args]
    code, text, cpu = run_child(pinned(argv, cpus), timeout=seconds + timeout_s + 30)
    if code != 0:
        raise RuntimeError(f"wrk exited {code}:\n{text[-2000:]}")
    return parse_output(text, cpu, connections, threads)

"""``threadfold up`` keeps its stack running through the crash of a part.

Its redis-server, killed with SIGKILL, is started again on its port with its data (the
append-only file): every delta acknowledged before the kill is in the state afterwards,
and new writes work, while the API, worker and beat processes run on unrestarted and
reconnect. A killed worker, and the broker's redis-server, are started again too. A
part that keeps exiting ends the stack instead of looping.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import redis

from tests.infra.ports import HOST
from tests.infra.processes import ManagedProcess, pid_alive, wait_until
from tests.workers.harness import FAST, ROOT, make_settings, state_dump, store_for
from threadfold.core import dump_messages
from threadfold.testing import Ledger

THREADFOLD = str(Path(sys.executable).with_name("threadfold"))
RESTARTED = (
    r"threadfold: {name} \(pid (\d+)\) exited \(killed by SIGKILL\); restarted it as pid (\d+)"
)


def _environment() -> dict[str, str | None]:
    """No THREADFOLD_* or REDIS_URL of ours (a private redis-server), short leases."""
    env: dict[str, str | None] = {
        k: None for k in os.environ if k.startswith("THREADFOLD_") or k == "REDIS_URL"
    }
    env.update({f"THREADFOLD_{name.upper()}": str(value) for name, value in FAST.items()})
    env["PYTHONPATH"] = str(ROOT)
    return env


def _children(pid: int) -> dict[int, str]:
    """The live child processes of ``pid``, with their command lines."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(stat[1]) == pid and stat[0] not in {"Z", "X"}:
                found[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue  # it exited while we looked
    return {p: cmd.decode(errors="replace") for p, cmd in found.items()}


def _descendants(pid: int) -> dict[int, str]:
    found = _children(pid)
    for child in list(found):
        found.update(_descendants(child))
    return found


def _write(http: httpx.Client, sent: Ledger, tag: str, count: int) -> None:
    """``count`` deltas over three threads, each acknowledged (202) before the next."""
    for i in range(count):
        thread = f"t{i % 3}"
        messages = [{"role": "user", "content": f"{tag} {i}", "id": f"{tag}-{i}"}]
        done = _accepted(http, f"/threads/{thread}/deltas", messages, f"{tag}-{i}")
        sent.add(f"_/{thread}", done["version"], messages, done["ids"])


def _accepted(http: httpx.Client, path: str, messages: list[Any], delta_id: str) -> Any:
    """The API's acknowledgement, retried with the same delta_id after a 503 (a pooled
    connection to the restarted Redis is re-made on the next call)."""
    answers: list[httpx.Response] = []

    def accepted() -> bool:
        answers.append(http.post(path, json={"messages": messages, "delta_id": delta_id}))
        assert answers[-1].status_code in {202, 503}, answers[-1].text
        return answers[-1].status_code == 202

    wait_until(accepted, 60, interval=0.2, message=f"delta {delta_id} was not accepted")
    return answers[-1].json()


def _all_applied(url: str, sent: Ledger) -> None:
    store = store_for(make_settings(url))

    def equal() -> bool:
        return all(
            state_dump(store, ref) == dump_messages(sent.expected(ref)) for ref in sent.threads()
        )

    wait_until(equal, 90, interval=0.2, message="the states did not reach every acknowledged delta")


def _restart_of(up: ManagedProcess, name: str, old: int) -> int:
    pattern = re.compile(RESTARTED.format(name=name))

    def said() -> bool:
        assert up.alive, f"up ended instead of restarting {name}:\n{up.read_log()}"
        return pattern.search(up.read_log()) is not None

    wait_until(said, 60, message=f"up did not restart {name}")
    found = pattern.search(up.read_log())
    assert found is not None and int(found[1]) == old, up.read_log()
    return int(found[2])


def test_up_restarts_a_killed_redis_server_with_its_data_a_killed_worker_and_broker(
    tmp_path: Path,
) -> None:
    up = ManagedProcess(
        [THREADFOLD, "up", "--port", "0", "--workers", "1", "--data-dir", str(tmp_path / "stack")],
        env=_environment(),
        log_path=tmp_path / "up.txt",
        cwd=tmp_path,
    )
    try:
        wait_until(lambda: "Running." in up.read_log(), 120, message="threadfold up did not start")
        api = re.search(r"API +(http://\S+)", up.read_log())
        port = re.search(r"Redis +redis://127\.0\.0\.1:(\d+)/0", up.read_log())
        assert api is not None and port is not None, up.read_log()
        url = f"redis://{HOST}:{port[1]}/0"
        admin = redis.Redis(host=HOST, port=int(port[1]))
        redis_pid = int(admin.info("server")["process_id"])
        others = {p: cmd for p, cmd in _children(up.pid).items() if p != redis_pid}
        assert any("-m threadfold.api" in cmd for cmd in others.values()), others
        sent = Ledger()
        with httpx.Client(base_url=api[1], timeout=30) as http:
            _write(http, sent, "before", 30)
            os.kill(redis_pid, signal.SIGKILL)  # acknowledged, perhaps not yet applied

            new_pid = _restart_of(up, "redis", redis_pid)
            assert int(admin.info("server")["process_id"]) == new_pid
            _write(http, sent, "after", 15)
            _all_applied(url, sent)
            assert set(_children(up.pid)) - {new_pid} == set(others), "not only redis restarted"

            worker = next(p for p, cmd in others.items() if "celery" in cmd and " worker" in cmd)
            os.killpg(worker, signal.SIGKILL)  # the worker and its pool
            new_worker = _restart_of(up, "worker", worker)
            _write(http, sent, "after-worker", 15)
            _all_applied(url, sent)
            assert new_worker in _children(up.pid)

            broker = next(p for p, cmd in others.items() if "redis-server" in cmd)
            os.kill(broker, signal.SIGKILL)  # the wake-ups it held are lost with it
            _restart_of(up, "broker", broker)
            _write(http, sent, "after-broker", 15)
            _all_applied(url, sent)
        admin.close()
    finally:
        up.send_signal(signal.SIGTERM)
        up.wait_for_exit(60)
        up.kill()
    assert up.returncode == 0, up.read_log()
    leftover = subprocess.run(
        ["pgrep", "-f", str(tmp_path)], capture_output=True, text=True, check=False
    )
    assert leftover.stdout.strip() == "", f"processes left running: {leftover.stdout}"


def test_up_killed_with_sigkill_leaves_no_process_behind(tmp_path: Path) -> None:
    """Its parts die with it (the kernel's parent-death signal): they kept running as
    orphans, holding their ports and the data folder, so a second ``up`` met a live
    redis-server on its append-only file."""
    up = ManagedProcess(
        [THREADFOLD, "up", "--port", "0", "--workers", "1", "--data-dir", str(tmp_path / "stack")],
        env=_environment(),
        log_path=tmp_path / "up.txt",
        cwd=tmp_path,
    )
    try:
        wait_until(lambda: "Running." in up.read_log(), 120, message="threadfold up did not start")
        assert len(_children(up.pid)) == 5, _children(up.pid)  # redis, broker, worker, beat, API
        parts = _descendants(up.pid)  # with the worker's pool and uvicorn's processes
        up.send_signal(signal.SIGKILL)  # the leader only: no chance to stop anything
        wait_until(
            lambda: not any(pid_alive(pid) for pid in parts),
            30,
            message=f"parts outlived up: {parts}",
        )
    finally:
        up.kill()
    leftover = subprocess.run(
        ["pgrep", "-f", str(tmp_path)], capture_output=True, text=True, check=False
    )
    assert leftover.stdout.strip() == "", f"processes left running: {leftover.stdout}"

"""No secret in any output: ``threadfold up`` against a Redis with ``requirepass`` and API
keys on, exercised through every route, ``threadfold status``, bad requests and a Redis
outage; then every output is searched for the password and the key: the stdout and
stderr of ``up`` and of each command, the log of every process it started, the
redis-server's log, and the status line, headers and body of every HTTP answer."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from tests.infra.ports import HOST
from tests.infra.processes import ManagedProcess, wait_until
from tests.infra.redis_server import RedisServer
from tests.workers.harness import FAST, ROOT

THREADFOLD = str(Path(sys.executable).with_name("threadfold"))
CELERY = str(Path(sys.executable).with_name("celery"))


@dataclass
class Outputs:
    """Every text the stack showed anyone, by where it was seen."""

    seen: list[tuple[str, str]] = field(default_factory=list)

    def add(self, where: str, text: str) -> str:
        self.seen.append((where, text))
        return text

    def http(self, answer: httpx.Response) -> httpx.Response:
        request = answer.request
        head = "\n".join(f"{k}: {v}" for k, v in answer.headers.items())
        self.add(f"{request.method} {request.url}", f"{answer.status_code}\n{head}\n{answer.text}")
        return answer

    def run(self, argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            argv, env=env, capture_output=True, text=True, timeout=60, check=False, cwd=ROOT
        )
        self.add(" ".join(argv[1:]), done.stdout + done.stderr)
        return done

    def files(self, folder: Path) -> None:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and path.suffix in {".log", ".txt", ""}:
                self.add(str(path), path.read_text(errors="replace"))

    def leaks(self, *secrets: str) -> list[str]:
        return [where for where, text in self.seen for s in secrets if s in text]


def _environment(**values: str) -> dict[str, str]:
    """This process's environment without THREADFOLD_* / REDIS_URL, plus ``values``."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("THREADFOLD_") and k != "REDIS_URL"
    }
    fast = {f"THREADFOLD_{name.upper()}": str(value) for name, value in FAST.items()}
    return {**env, **fast, "PYTHONPATH": str(ROOT), **values}


def test_a_password_protected_stack_shows_no_password_and_no_api_key_anywhere(
    tmp_path: Path,
) -> None:
    password, key = f"pw-{uuid.uuid4().hex}", f"key-{uuid.uuid4().hex}"
    # requirepass from a config file: the password is not on its command line either.
    server = RedisServer(password=password, appendonly=True, data_dir=tmp_path / "redis")
    env = _environment(
        THREADFOLD_REDIS_URL=server.url, THREADFOLD_API_KEYS=json.dumps({key: None})
    )
    out = Outputs()
    up = ManagedProcess(
        [THREADFOLD, "up", "--port", "0", "--workers", "1", "--data-dir", str(tmp_path / "stack")],
        env=env,
        log_path=tmp_path / "up.txt",
        cwd=tmp_path,
    )
    try:
        wait_until(lambda: "Running." in up.read_log(), 120, message="threadfold up did not start")
        found = re.search(r"API +(http://\S+)", up.read_log())
        assert found is not None
        api = found[1]
        with httpx.Client(
            base_url=api, headers={"Authorization": f"Bearer {key}"}, timeout=30
        ) as http:
            _exercise(http, out, api)
            for argv in (["status"], ["status", "t1"], ["status", "never-written"]):
                out.run([THREADFOLD, *argv], env)
            wrong = out.run(
                [THREADFOLD, "status"],
                {**env, "THREADFOLD_REDIS_URL": f"redis://:wrong-{password}@{HOST}:{server.port}"},
            )
            assert wrong.returncode == 2 and "Redis error:" in wrong.stderr, wrong.stderr

            server.kill()  # a Redis outage: every client meets connection errors
            down = out.http(http.post("/threads/t1/deltas", json={"messages": ["lost?"]}))
            assert down.status_code == 503, down.text
            assert out.http(http.get("/readyz")).status_code == 503
            failed = out.run([THREADFOLD, "status"], env)
            assert failed.returncode == 2 and "Redis error:" in failed.stderr, failed.stderr
            worker_log = tmp_path / "stack" / "logs" / "worker.log"
            wait_until(
                lambda: "Cannot connect to redis://" in worker_log.read_text(),
                60,
                message="the worker did not report the lost broker",
            )
            server.restart()
            wait_until(
                lambda: out.http(http.get("/readyz")).status_code == 200,
                60,
                message="the stack did not come back with Redis",
            )
            back = out.http(http.post("/threads/t1/deltas", json={"messages": ["back"]}))
            assert back.status_code == 202, back.text
            version = back.json()["version"]
            read = http.get("/threads/t1/state", params={"min_version": version, "wait": 30})
            assert out.http(read).status_code == 200
    finally:
        up.send_signal(signal.SIGTERM)
        up.wait_for_exit(60)
        up.kill()
        server.close()
    assert up.returncode == 0, up.read_log()
    out.add("threadfold up", up.read_log())
    out.files(tmp_path / "stack" / "logs")
    out.files(tmp_path / "redis")

    assert out.leaks(password, key) == []
    # The URLs were shown, masked: the check above looked where secrets would have been.
    assert f"Redis     redis://:***@{HOST}:{server.port}/0" in up.read_log()
    assert f"Cannot connect to redis://:***@{HOST}:{server.port}/0" in worker_log.read_text()


def _exercise(http: httpx.Client, out: Outputs, api: str) -> None:
    """Every route, a bad request and an unknown key; each answer recorded."""
    delta = {"messages": [{"role": "user", "content": "hi"}], "delta_id": "d1"}
    accepted = out.http(http.post("/threads/t1/deltas", json=delta))
    assert accepted.status_code == 202, accepted.text
    bulk = {"deltas": [{"thread_id": "t2", "messages": ["hello"]}]}
    assert out.http(http.post("/deltas", json=bulk)).status_code == 202
    wanted = {"min_version": accepted.json()["version"], "wait": 30}
    assert out.http(http.get("/threads/t1/state", params=wanted)).status_code == 200
    assert out.http(http.get("/threads/t1/state", params={"format": "openai"})).status_code == 200
    for path in ("/threads/t1/status", "/readyz", "/healthz", "/metrics", "/openapi.json"):
        assert out.http(http.get(path)).status_code == 200, path
    bad = out.http(http.post("/threads/t1/deltas", json={"messages": [{"role": "tool"}]}))
    assert bad.status_code == 422, bad.text
    assert out.http(http.get("/threads/nothing-here/state")).status_code == 404
    assert out.http(httpx.get(f"{api}/threads/t1/state")).status_code == 401
    unknown = {"Authorization": "Bearer not-the-key-0000000000"}
    assert out.http(httpx.get(f"{api}/threads/t1/state", headers=unknown)).status_code == 401


def test_bad_settings_are_refused_without_showing_the_password_or_the_keys(
    tmp_path: Path,
) -> None:
    password, key = f"pw-{uuid.uuid4().hex}", f"key-{uuid.uuid4().hex[:12]}"
    url = f"redis://:{password}@{HOST}:1/0"
    unordered = _environment(THREADFOLD_REDIS_URL=url, THREADFOLD_DRAIN_SECONDS="1000")
    bad_tenant = _environment(
        THREADFOLD_REDIS_URL=url, THREADFOLD_API_KEYS=json.dumps({key: "no tenant!"})
    )
    out = Outputs()
    status = out.run([THREADFOLD, "status"], unordered)
    assert status.returncode == 2
    assert "bad THREADFOLD_* setting: settings: Value error, need drain_seconds" in status.stderr
    api = out.run([sys.executable, "-m", "threadfold.api"], bad_tenant)
    assert api.returncode == 1
    assert "bad THREADFOLD_* setting: THREADFOLD_API_KEYS: Value error, tenant" in api.stderr
    worker = out.run([CELERY, "-A", "threadfold.workers.runtime.worker", "worker"], unordered)
    assert worker.returncode != 0
    assert "bad THREADFOLD_* setting: settings: Value error" in worker.stderr
    assert out.leaks(password, key) == []

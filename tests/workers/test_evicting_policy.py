"""A state Redis whose ``maxmemory-policy`` evicts keys loses acknowledged deltas without
an error (measured: 40 of 40 threads wrong under ``allkeys-lru``). Every service refuses
to start on one, naming the policy and the fix; ``threadfold status`` shows it; a
managed Redis that denies CONFIG is read through INFO, and one that denies both only
gets a warning. The run-time change is in tests/api/test_redis_memory.py (/readyz).
"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.infra.ports import free_port
from tests.infra.processes import ManagedProcess, wait_until
from tests.infra.redis_cluster import RedisCluster
from tests.infra.redis_server import RedisServer
from tests.workers.harness import ROOT, make_settings, start_beat, start_worker
from threadfold.workers.ops.processes import settings_env
from threadfold.workers.ops.stack import start_stack
from threadfold.workers.redisio.client import async_client, sync_client
from threadfold.workers.redisio.maxmemory import EvictingPolicy, NodeMemory, aread, check_url, read

THREADFOLD = str(Path(sys.executable).with_name("threadfold"))
FIX = "set maxmemory-policy noeviction"
FAST_QUEUE = make_settings("redis://unused:1/0").queue


@pytest.fixture
def evicting() -> Iterator[RedisServer]:
    with RedisServer(extra_args=["--maxmemory-policy", "allkeys-lru"]) as server:
        yield server


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("THREADFOLD_")}
    env.pop("REDIS_URL", None)
    return {**env, "PYTHONPATH": str(ROOT), **extra}


def _threadfold(
    args: list[str], cwd: Path, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [THREADFOLD, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=180,
        check=False,
    )


def test_worker_beat_and_api_refuse_to_start_naming_the_policy_and_the_fix(
    evicting: RedisServer, tmp_path: Path
) -> None:
    settings = make_settings(evicting.url)
    api = ManagedProcess(
        [sys.executable, "-m", "threadfold.api"],
        env={**settings_env(settings), "PYTHONPATH": str(ROOT),
             "THREADFOLD_PORT": str(free_port())},
        log_path=tmp_path / "api.log",
        cwd=ROOT,
    )
    processes = [start_worker(settings, "refused", tmp_path), start_beat(settings, tmp_path), api]
    try:
        for process in processes:
            assert process.wait(60) != 0, process.read_log()[-2000:]
            log = process.read_log()
            assert "refusing to start" in log, log[-2000:]
            assert "maxmemory-policy allkeys-lru" in log and FIX in log, log[-2000:]
    finally:
        for process in processes:
            process.kill()


def test_up_on_an_evicting_redis_refuses_to_start(evicting: RedisServer, tmp_path: Path) -> None:
    done = _threadfold(
        ["up", "--exit", "--port", "0", "--workers", "1"], tmp_path, _env(REDIS_URL=evicting.url)
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "maxmemory-policy allkeys-lru" in done.stderr and FIX in done.stderr, done.stderr


def test_up_keeps_the_broker_apart_from_the_state_redis(tmp_path: Path) -> None:
    """A full state Redis must not take the broker with it: the local stack's own
    redis-server holds the state, a second one the broker."""
    stack = start_stack(
        make_settings("redis://unused:1/0"), redis_url=None, workers=1, port=0, data_dir=tmp_path
    )
    broker = redis.Redis.from_url(stack.broker_url)
    state = redis.Redis.from_url(stack.redis_url)
    try:
        assert stack.broker_url and stack.broker_url != stack.redis_url
        binding = f"_kombu.binding.{FAST_QUEUE}".encode()
        wait_until(lambda: broker.exists(binding), 60, message="no worker consumes the broker")
        assert state.ping() and not state.keys("_kombu*")
    finally:
        broker.close()
        state.close()
        stack.stop()


def test_status_shows_the_policy_and_fails_while_it_evicts(
    evicting: RedisServer, tmp_path: Path
) -> None:
    env = _env(THREADFOLD_REDIS_URL=evicting.url)
    done = _threadfold(["status"], tmp_path, env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "maxmemory-policy allkeys-lru" in done.stdout and "EVICTING" in done.stdout
    assert FIX in done.stdout
    with evicting.probe() as admin:
        admin.config_set("maxmemory-policy", "noeviction")
    done = _threadfold(["status"], tmp_path, env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "maxmemory-policy noeviction" in done.stdout and "EVICTING" not in done.stdout


def test_a_denied_config_get_falls_back_to_info_and_neither_only_warns(
    evicting: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    # As managed services do: CONFIG denied (or renamed), INFO too for some.
    with evicting.probe() as admin:
        for user, denied in (("noconfig", ["-config"]), ("blind", ["-config", "-info"])):
            admin.acl_setuser(
                user, enabled=True, passwords=[f"+{user}-pw"], keys=["*"], channels=["*"],
                commands=["+@all", *denied],
            )
    base = f"127.0.0.1:{evicting.port}/0"
    with pytest.raises(EvictingPolicy, match=f"maxmemory-policy allkeys-lru: .*{FIX}"):
        check_url(f"redis://noconfig:noconfig-pw@{base}", cluster=False, who="test")
    client = sync_client(f"redis://noconfig:noconfig-pw@{base}", cluster=False)
    try:
        [node] = read(client)
        assert (node.policy, node.limit, node.evicting) == ("allkeys-lru", 0, True)
    finally:
        client.close()
    with caplog.at_level(logging.WARNING, logger="threadfold.maxmemory"):
        check_url(f"redis://blind:blind-pw@{base}", cluster=False, who="test")  # no refusal
        check_url(f"redis://127.0.0.1:{free_port()}/0", cluster=False, who="test")  # nor here
    assert "could not read the state Redis's maxmemory-policy" in caplog.text
    assert "the state Redis is unreachable" in caplog.text
    assert "blind-pw" not in caplog.text


async def _aread_cluster(url: str) -> list[NodeMemory]:
    client = async_client(url, cluster=True)
    try:
        return await aread(client)
    finally:
        await client.aclose()


def test_every_primary_of_a_cluster_is_checked(redis_cluster: RedisCluster) -> None:
    client = sync_client(redis_cluster.url, cluster=True)
    victim = redis_cluster.nodes[1]
    try:
        assert [n.policy for n in read(client)] == ["noeviction"] * 3
        with victim.probe() as admin:
            admin.config_set("maxmemory-policy", "volatile-lru")
        for nodes in (read(client), asyncio.run(_aread_cluster(redis_cluster.url))):
            assert [n.node for n in nodes if n.evicting] == [f"127.0.0.1:{victim.port}"]
        with pytest.raises(EvictingPolicy, match=f"volatile-lru on 127.0.0.1:{victim.port}"):
            check_url(redis_cluster.url, cluster=True, who="test")
    finally:
        with victim.probe() as admin:
            admin.config_set("maxmemory-policy", "noeviction")
        client.close()

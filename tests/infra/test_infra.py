"""The test infrastructure itself: real services come up, keep what they should across a
crash, and leave no process or directory behind."""

from __future__ import annotations

import gc
import os
import signal
import socket
import sys
from pathlib import Path

import pytest
import redis
from redis.crc import key_slot

from tests.infra import (
    ExecutableNotFoundError,
    ManagedProcess,
    RedisCluster,
    RedisServer,
    ServiceStartError,
    free_port,
    pid_alive,
    wait_until,
)
from tests.infra.ports import CLUSTER_BUS_OFFSET

# The fixtures (redis_server, redis_url, ...) come from tests/conftest.py, which imports
# them from tests.infra.fixtures; importing them here too would start a second session server.


def _gone(pid: int) -> bool:
    """True once `pid` has exited (an orphan may take a moment to be reaped by init)."""
    wait_until(lambda: not pid_alive(pid), timeout=5, message=f"pid {pid} is still alive")
    return True


def test_free_port_with_cluster_bus_also_leaves_the_bus_port_free() -> None:
    port = free_port(cluster_bus=True)
    for candidate in (port, port + CLUSTER_BUS_OFFSET):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", candidate))


def test_a_server_starts_on_a_free_loopback_port_and_answers_ping() -> None:
    with RedisServer() as server, server.client(decode_responses=True) as client:
        assert server.url == f"redis://127.0.0.1:{server.port}/0"
        assert client.ping() is True
        client.set("greeting", "hello")
        assert client.get("greeting") == "hello"


def test_a_key_written_before_a_kill_survives_a_restart_with_appendfsync_always() -> None:
    with RedisServer(appendonly=True, appendfsync="always") as server:
        port, crashed_pid = server.port, server.pid
        with server.client() as client:
            client.set("survivor", "yes")
        server.kill()
        assert not server.alive
        server.restart()
        assert server.port == port
        assert server.pid != crashed_pid
        with server.client() as client:
            assert client.get("survivor") == b"yes"


def test_a_server_without_persistence_restarts_empty() -> None:
    with RedisServer() as server, server.client() as client:
        client.set("ephemeral", 1)
        server.restart()
        assert client.get("ephemeral") is None


def test_a_password_protected_server_wants_it_keeps_it_off_its_command_line_and_restarts() -> None:
    password = "pw:with/odd@chars"  # noqa: S105  # a throwaway, URL-quoted in the url
    with RedisServer(password=password, appendonly=True) as server:
        assert server.url == f"redis://:pw%3Awith%2Fodd%40chars@127.0.0.1:{server.port}/0"
        with redis.Redis(port=server.port) as anonymous, pytest.raises(redis.AuthenticationError):
            anonymous.ping()
        with redis.Redis.from_url(server.url) as client:
            client.set("kept", "yes")
        assert password not in Path(f"/proc/{server.pid}/cmdline").read_text()
        server.kill()
        server.restart()  # the readiness probe and the SHUTDOWN of stop() authenticate
        with server.probe() as admin:
            assert admin.get("kept") == b"yes"


def test_no_server_process_or_directory_survives_the_context_manager() -> None:
    with RedisServer(appendonly=True) as server:
        pid, directory = server.pid, server.dir
        assert pid_alive(pid)
    assert _gone(pid)
    assert not directory.exists()


def test_a_dropped_server_is_killed_by_its_finalizer() -> None:
    server = RedisServer()
    pid, directory = server.pid, server.dir
    del server
    gc.collect()
    assert _gone(pid)
    assert not directory.exists()


def test_a_three_master_cluster_accepts_keys_in_different_slots_and_leaves_nothing() -> None:
    keys = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]
    with RedisCluster(masters=3) as cluster:
        pids = [node.pid for node in cluster.nodes]
        assert cluster.url == f"redis://127.0.0.1:{cluster.nodes[0].port}"
        client = cluster.client(decode_responses=True)
        for key in keys:
            client.set(key, key.upper())
        assert [client.get(key) for key in keys] == [key.upper() for key in keys]
        assert len({key_slot(key.encode()) for key in keys}) == len(keys)
        keys_per_node = [node.client().dbsize() for node in cluster.nodes]
        assert sum(keys_per_node) == len(keys)
        assert sorted(keys_per_node)[-2] > 0, "the keys should span more than one master"
    assert all(_gone(pid) for pid in pids)


def test_killing_a_managed_process_kills_its_whole_process_group(tmp_path: Path) -> None:
    shell = ["sh", "-c", "sleep 60 & echo $!; wait"]
    with ManagedProcess(shell, log_path=tmp_path / "sh.log") as process:
        assert os.getpgid(process.pid) == process.pid
        wait_until(process.read_log, timeout=5, message="the shell logged no child pid")
        grandchild = int(process.read_log().split()[0])
        assert pid_alive(grandchild)
        assert process.kill() == -signal.SIGKILL
    assert not process.alive
    assert _gone(grandchild)


def test_terminate_stops_a_process_that_saw_its_env_overrides(tmp_path: Path) -> None:
    code = "import os, time; print(os.environ['PROBE'], flush=True); time.sleep(60)"
    process = ManagedProcess(
        [sys.executable, "-c", code], log_path=tmp_path / "py.log", env={"PROBE": "seen"}
    )
    wait_until(lambda: "seen" in process.read_log(), timeout=5, message="PROBE not printed")
    assert process.terminate(timeout=5) == -signal.SIGTERM
    assert not pid_alive(process.pid)


def test_a_dropped_managed_process_is_killed_by_its_finalizer(tmp_path: Path) -> None:
    process = ManagedProcess(["sleep", "60"], log_path=tmp_path / "sleep.log")
    pid = process.pid
    del process
    gc.collect()
    assert _gone(pid)


def test_wait_until_raises_timeout_error_with_the_message_and_the_last_error() -> None:
    def refuse() -> bool:
        raise ConnectionRefusedError("refused")

    with pytest.raises(TimeoutError, match="never happened") as raised:
        wait_until(refuse, timeout=0.05, message="never happened", ignore=(OSError,))
    assert isinstance(raised.value.__cause__, ConnectionRefusedError)


def test_a_missing_redis_binary_is_a_clear_error() -> None:
    with pytest.raises(ExecutableNotFoundError, match="not on PATH"):
        RedisServer(executable="redis-server-that-does-not-exist")


def test_a_missing_command_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ExecutableNotFoundError, match="no-such-command"):
        ManagedProcess(["no-such-command"], log_path=tmp_path / "x.log")


def test_a_server_that_cannot_start_reports_the_reason_from_its_log() -> None:
    with pytest.raises(ServiceStartError, match="not-a-real-option"):
        RedisServer(extra_args=["--not-a-real-option", "1"])


@pytest.mark.parametrize("run", ["first", "second"])
def test_redis_url_gives_every_test_an_empty_database(redis_url: str, run: str) -> None:
    with redis.Redis.from_url(redis_url) as client:
        assert client.dbsize() == 0
        client.set("left-behind", run)


def test_the_redis_server_fixture_is_a_fresh_server(redis_server: RedisServer) -> None:
    with redis_server.client() as client:
        assert client.dbsize() == 0

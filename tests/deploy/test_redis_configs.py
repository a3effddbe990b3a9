"""The example Redis configurations are accepted by a real redis-server and never evict."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from tests.deploy.manifests import DEPLOY, argv, compose_services
from tests.infra.redis_server import RedisServer

CLUSTER = DEPLOY / "redis-cluster"
CONFIGS = [CLUSTER / "redis.conf", CLUSTER / "broker.conf"]
# Set by the test harness to a private loopback port and directory.
HARNESS_DIRECTIVES = {"port", "bind", "dir", "protected-mode", "daemonize", "logfile"}


def directives(path: Path) -> list[list[str]]:
    lines = (line.strip() for line in path.read_text().splitlines())
    return [shlex.split(line) for line in lines if line and not line.startswith("#")]


def as_arguments(config: list[list[str]]) -> list[str]:
    return [
        arg
        for name, *values in config
        if name not in HARNESS_DIRECTIVES
        for arg in (f"--{name}", *values)
    ]


def compose_redis_arguments(service: str) -> list[str]:
    command = argv(compose_services()[service]["command"])
    assert command[0] == "redis-server"
    return command[1:]


def pairs(arguments: list[str]) -> dict[str, str]:
    """``--name value`` command-line arguments as a mapping."""
    names = arguments[0::2]
    assert all(name.startswith("--") for name in names), arguments
    return {name[2:]: value for name, value in zip(names, arguments[1::2], strict=True)}


SOURCES = {path.name: as_arguments(directives(path)) for path in CONFIGS} | {
    f"compose {service}": compose_redis_arguments(service) for service in ("redis", "redis-broker")
}
#: What redis-server's CONFIG GET answers for a memory size in a config (it says bytes).
UNITS = {"kb": 1024, "mb": 1024**2, "gb": 1024**3}


def as_config_get(name: str, value: str) -> str:
    if name == "maxmemory" and value[-2:].lower() in UNITS:
        return str(int(value[:-2]) * UNITS[value[-2:].lower()])
    return value


@pytest.mark.parametrize("source", SOURCES)
def test_every_redis_setting_in_deploy_is_durable_and_never_evicts(source: str) -> None:
    settings = pairs(SOURCES[source])
    assert settings["maxmemory-policy"] == "noeviction"
    assert settings["appendonly"] == "yes"
    assert settings["appendfsync"] == "everysec"


@pytest.mark.parametrize("source", SOURCES)
def test_every_redis_setting_in_deploy_is_accepted_by_redis_server(source: str) -> None:
    settings = pairs(SOURCES[source])
    cluster = settings.get("cluster-enabled") == "yes"
    with (
        RedisServer(extra_args=SOURCES[source], cluster_bus=cluster) as server,
        server.probe() as admin,
    ):
        for name, value in settings.items():
            assert admin.config_get(name) == {name: as_config_get(name, value)}, name
        assert int(admin.info("cluster")["cluster_enabled"]) == int(cluster)


def test_the_cluster_node_config_is_a_cluster_and_the_broker_config_is_not() -> None:
    assert ["cluster-enabled", "yes"] in directives(CLUSTER / "redis.conf")
    assert not any(d[0] == "cluster-enabled" for d in directives(CLUSTER / "broker.conf"))


def test_a_cluster_environment_puts_the_broker_outside_the_cluster() -> None:
    env = dict(
        line.split("=", 1)
        for line in (CLUSTER / "threadfold.env").read_text().splitlines()
        if line and not line.startswith("#")
    )
    assert env["THREADFOLD_CLUSTER"] == "true"
    state_host = env["THREADFOLD_REDIS_URL"].split("://", 1)[1].split(":")[0]
    broker = env["THREADFOLD_BROKER_URL"]
    assert broker.startswith(("redis://", "rediss://", "amqp://", "sentinel://"))
    assert state_host not in broker

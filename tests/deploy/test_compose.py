"""Static checks of deploy/docker-compose.yml and its RabbitMQ override."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from tests.deploy.manifests import (
    COMPOSE,
    COMPOSE_FILES,
    COMPOSE_RABBITMQ,
    DEPLOY,
    LoadSettings,
    argv,
    compose_services,
    is_known_entry,
    is_project_image,
    seconds,
    service_env,
)
from threadfold.api.settings import ApiSettings
from threadfold.workers.runtime.shared_broker import server, shares_state
from threadfold.workers.settings import Settings


@pytest.mark.parametrize("files", COMPOSE_FILES, ids=lambda fs: "+".join(f.name for f in fs))
def test_every_compose_service_environment_loads_as_settings(
    files: tuple[Path, ...], settings_from_env: LoadSettings
) -> None:
    for name, service in compose_services(*files).items():
        if is_project_image(service["image"]):
            settings_from_env(service_env(service))  # raises on a bad value or order
        else:
            assert not any(k.startswith("THREADFOLD_") for k in service_env(service)), name


def test_compose_builds_the_project_image_from_the_repository_root() -> None:
    for name, service in compose_services().items():
        if is_project_image(service["image"]):
            context = (COMPOSE.parent / service["build"]["context"]).resolve()
            assert context == DEPLOY.parent, name
            assert (context / service["build"]["dockerfile"]).is_file(), name


def test_compose_runs_exactly_one_beat() -> None:
    beat = compose_services()["beat"]
    assert beat["deploy"]["replicas"] == 1
    assert argv(beat["command"])[:2] == ["threadfold", "beat"]


def test_compose_scales_workers_by_replicas() -> None:
    worker = compose_services()["worker"]
    assert worker["deploy"]["replicas"] >= 1
    assert "container_name" not in worker  # a fixed name would forbid more than one


@pytest.mark.parametrize("files", COMPOSE_FILES, ids=lambda fs: "+".join(f.name for f in fs))
def test_compose_worker_stop_grace_outlasts_the_longest_task(
    files: tuple[Path, ...], settings_from_env: LoadSettings
) -> None:
    worker = compose_services(*files)["worker"]
    settings: Settings = settings_from_env(service_env(worker))
    grace = seconds(worker["stop_grace_period"])
    assert grace > settings.drain_seconds + settings.task_soft_time_limit
    assert grace > settings.task_time_limit


def test_compose_api_stop_grace_outlasts_the_longest_read_wait(
    settings_from_env: LoadSettings,
) -> None:
    api = compose_services()["api"]
    settings: ApiSettings = settings_from_env(service_env(api))
    assert seconds(api["stop_grace_period"]) > settings.max_wait_seconds


def test_every_long_running_compose_service_has_a_healthcheck() -> None:
    for name, service in compose_services().items():
        check = service.get("healthcheck")
        assert check, f"{name} has no healthcheck"
        if check.get("disable"):
            assert name == "beat", f"only beat (no port, no ping) may go without: {name}"
        else:
            assert check["test"][0] in {"CMD", "CMD-SHELL"}, name


def test_project_healthchecks_use_python_or_the_celery_app() -> None:
    for name, service in compose_services().items():
        test = (service.get("healthcheck") or {}).get("test")
        if not is_project_image(service["image"]) or not test:
            continue
        command = shlex.split(test[1]) if test[0] == "CMD-SHELL" else list(test[1:])
        if command[0] == "python":
            assert command[1] == "-c", name
            compile(command[2], f"{name} healthcheck", "exec")
        else:
            assert is_known_entry(command), f"{name}: {command}"


def test_optional_services_sit_behind_their_profiles() -> None:
    services = compose_services()
    assert services["rabbitmq"]["profiles"] == ["rabbitmq"]
    assert services["flower"]["profiles"] == ["flower"]
    for name in ("redis", "redis-broker", "api", "worker", "beat"):
        assert "profiles" not in services[name], name


def test_the_rabbitmq_override_points_every_celery_process_at_amqp(
    settings_from_env: LoadSettings,
) -> None:
    services = compose_services(COMPOSE, COMPOSE_RABBITMQ)
    for name in ("api", "worker", "beat"):
        settings: Settings = settings_from_env(service_env(services[name]))
        assert settings.broker.startswith("amqp://"), name
        assert settings.redis_url.get_secret_value().startswith("redis://"), name
    assert any("amqp://" in part for part in argv(services["flower"]["command"]))


@pytest.mark.parametrize("files", COMPOSE_FILES, ids=lambda fs: "+".join(f.name for f in fs))
def test_the_broker_is_never_on_the_state_redis(
    files: tuple[Path, ...], settings_from_env: LoadSettings
) -> None:
    # On the state's Redis (any db) the broker shares its memory: a full state refuses
    # the broker's bookkeeping too (docs/operations.md, "Redis memory").
    for name in ("api", "worker", "beat"):
        settings: Settings = settings_from_env(service_env(compose_services(*files)[name]))
        assert settings.broker_url is not None, name
        assert not shares_state(settings), f"{name}: {settings.broker} is the state's Redis"


def test_the_default_broker_is_a_small_noeviction_redis_service_of_its_own(
    settings_from_env: LoadSettings,
) -> None:
    services = compose_services()
    settings: Settings = settings_from_env(service_env(services["worker"]))
    broker = server(settings.broker)
    assert broker is not None and broker[0] != "redis", settings.broker
    service = services[broker[0]]  # the broker's host is a service of the file
    arguments = argv(service["command"])
    assert service["image"].split(":")[0] == "redis" and arguments[0] == "redis-server"
    options = dict(zip(arguments[1::2], arguments[2::2], strict=True))
    assert options["--maxmemory-policy"] == "noeviction"
    assert options["--maxmemory"] not in {"0", ""}  # its own limit, not the machine's
    assert service["volumes"] != services["redis"]["volumes"]
    flower = argv(services["flower"]["command"])
    assert f"--broker={settings.broker}" in flower
    for name in ("api", "worker", "beat"):  # they start once the broker answers
        assert services[name]["depends_on"][broker[0]] == {"condition": "service_healthy"}

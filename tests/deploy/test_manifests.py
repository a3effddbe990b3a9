"""Static checks of the compose files and Kubernetes manifests in deploy/."""

from __future__ import annotations

import asyncio
import re
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from api import metrics as prom
from api.app import ROUTES
from api.settings import ApiSettings
from core.keys import Keyspace
from tests.deploy.manifests import (
    COMPOSE,
    COMPOSE_RABBITMQ,
    DEPLOY,
    K8S,
    KUSTOMIZATION,
    OFFICIAL_IMAGES,
    PROJECT_IMAGE,
    SUBCOMMANDS,
    Object,
    argv,
    compose_services,
    config_map_data,
    containers,
    deploy_files,
    is_project_image,
    k8s_files,
    k8s_object,
    k8s_objects,
    load,
    load_all,
    pod_env,
    pod_spec,
    secret_data,
    seconds,
    service_env,
    workloads,
    yaml_files,
)
from workers.redis_io import async_client
from workers.settings import Settings

SETTING_NAMES = frozenset(f"THREADFOLD_{name.upper()}" for name in ApiSettings.model_fields)
SECRET_NAMES = frozenset(
    f"THREADFOLD_{name.upper()}"
    for name, field in ApiSettings.model_fields.items()
    if "SecretStr" in str(field.annotation)
)
ROUTE_PATHS = frozenset(path for path, *_ in ROUTES)
COMPOSE_FILES = [(COMPOSE,), (COMPOSE, COMPOSE_RABBITMQ)]


def relative(path: Path) -> str:
    return str(path.relative_to(DEPLOY))


@pytest.fixture
def settings_from_env(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Load ApiSettings from exactly the given THREADFOLD_* variables, as a process would."""

    def load_settings(env: Mapping[str, str]) -> ApiSettings:
        for name in SETTING_NAMES:
            monkeypatch.delenv(name, raising=False)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        return ApiSettings()

    return load_settings


def is_known_entry(command: list[str]) -> bool:
    """``threadfold <sub>``, ``python -m api`` or ``celery -A workers.worker ...``."""
    match command:
        case ["threadfold", sub, *_]:
            return sub in SUBCOMMANDS
        case ["python" | "python3", "-m", "api", *_]:
            return True
        case ["celery", "-A" | "--app", "workers.worker", *_]:
            return True
        case ["celery", "--app=workers.worker", *_]:
            return True
    return False


def project_commands() -> list[tuple[str, list[str]]]:
    """(where, argv) of every container that runs the project image."""
    found: list[tuple[str, list[str]]] = []
    for files in COMPOSE_FILES:
        for name, service in compose_services(*files).items():
            if is_project_image(service.get("image", "")) and "command" in service:
                found.append((f"compose {name}", argv(service["command"])))
    for workload in workloads():
        for container in containers(workload):
            if is_project_image(container["image"]):
                command = argv(container.get("command")) + argv(container.get("args"))
                found.append((f"k8s {workload['metadata']['name']}", command))
    return found


def all_images() -> list[tuple[str, str]]:
    images = [
        (f"compose {name}", str(service["image"]))
        for files in COMPOSE_FILES
        for name, service in compose_services(*files).items()
    ]
    images += [
        (f"k8s {workload['metadata']['name']}", str(container["image"]))
        for workload in workloads()
        for container in containers(workload)
    ]
    return images


# ---- every file ---------------------------------------------------------------------


@pytest.mark.parametrize("path", yaml_files(), ids=relative)
def test_every_yaml_file_parses(path: Path) -> None:
    documents = [doc for doc in load_all(path) if doc is not None]
    assert documents, f"{path} is empty"
    assert all(isinstance(doc, dict) for doc in documents)


@pytest.mark.parametrize("path", deploy_files(), ids=relative)
def test_every_threadfold_variable_in_deploy_names_a_setting(path: Path) -> None:
    names = set(re.findall(r"\bTHREADFOLD_[A-Z0-9_]+\b", path.read_text()))
    assert names <= SETTING_NAMES, f"not settings: {sorted(names - SETTING_NAMES)}"


# ---- compose ------------------------------------------------------------------------


@pytest.mark.parametrize("files", COMPOSE_FILES, ids=lambda fs: "+".join(f.name for f in fs))
def test_every_compose_service_environment_loads_as_settings(
    files: tuple[Path, ...], settings_from_env: Any
) -> None:
    for name, service in compose_services(*files).items():
        if is_project_image(service["image"]):
            settings_from_env(service_env(service))  # raises on a bad value or order
        else:
            assert not any(k.startswith("THREADFOLD_") for k in service_env(service)), name


def test_compose_runs_redis_as_an_append_only_noeviction_store() -> None:
    command = " ".join(argv(compose_services()["redis"]["command"]))
    assert "--appendonly yes" in command
    assert "--appendfsync everysec" in command
    assert "--maxmemory-policy noeviction" in command


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
    files: tuple[Path, ...], settings_from_env: Any
) -> None:
    worker = compose_services(*files)["worker"]
    settings: Settings = settings_from_env(service_env(worker))
    grace = seconds(worker["stop_grace_period"])
    assert grace > settings.drain_seconds + settings.task_soft_time_limit
    assert grace > settings.task_time_limit


def test_compose_api_stop_grace_outlasts_the_longest_read_wait(settings_from_env: Any) -> None:
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
    for name in ("redis", "api", "worker", "beat"):
        assert "profiles" not in services[name], name


def test_the_rabbitmq_override_points_every_celery_process_at_amqp(
    settings_from_env: Any,
) -> None:
    services = compose_services(COMPOSE, COMPOSE_RABBITMQ)
    for name in ("api", "worker", "beat"):
        settings: Settings = settings_from_env(service_env(services[name]))
        assert settings.broker.startswith("amqp://"), name
        assert settings.redis_url.get_secret_value().startswith("redis://"), name
    assert any("amqp://" in part for part in argv(services["flower"]["command"]))


# ---- commands and images ------------------------------------------------------------


@pytest.mark.parametrize(("where", "command"), project_commands(), ids=lambda v: str(v))
def test_every_project_container_runs_an_existing_entry_point(
    where: str, command: list[str]
) -> None:
    assert is_known_entry(command), f"{where}: {command}"


def test_worker_commands_pass_an_integer_concurrency() -> None:
    for where, command in project_commands():
        if command[:2] == ["threadfold", "worker"] and "--concurrency" in command:
            value = command[command.index("--concurrency") + 1]
            assert value.isdigit() and int(value) >= 1, where


@pytest.mark.parametrize(("where", "image"), all_images(), ids=lambda v: str(v))
def test_every_image_is_the_project_image_or_an_official_one(where: str, image: str) -> None:
    name, _, tag = image.partition(":")
    assert name == PROJECT_IMAGE or name in OFFICIAL_IMAGES, f"{where}: {image}"
    assert tag and tag != "latest", f"{where}: pin a tag, not {image!r}"


# ---- kubernetes ---------------------------------------------------------------------


def test_every_k8s_file_is_listed_in_the_kustomization() -> None:
    kustomization = load(KUSTOMIZATION)
    listed = set(kustomization["resources"])
    assert listed == {path.name for path in k8s_files()}
    assert all((K8S / name).is_file() for name in listed)
    assert "namespace" not in kustomization  # namespace-agnostic
    assert [i["name"] for i in kustomization["images"]] == [PROJECT_IMAGE]


def test_no_k8s_object_pins_a_namespace() -> None:
    for obj in k8s_objects():
        assert "namespace" not in obj["metadata"], obj["metadata"]["name"]


def test_the_configmap_and_secret_load_as_api_settings(settings_from_env: Any) -> None:
    settings: ApiSettings = settings_from_env({**config_map_data(), **secret_data()})
    assert settings.host == "0.0.0.0"  # noqa: S104  # the pod's interface, by design
    assert settings.key_map()  # the placeholder keys parse


def test_the_configmap_holds_no_secret_setting() -> None:
    assert not set(config_map_data()) & SECRET_NAMES


def test_the_secret_holds_exactly_the_urls_and_api_keys() -> None:
    assert SECRET_NAMES == {
        "THREADFOLD_REDIS_URL",
        "THREADFOLD_BROKER_URL",
        "THREADFOLD_API_KEYS",
    }
    assert set(secret_data()) == SECRET_NAMES


def test_every_workload_takes_its_settings_from_the_configmap_and_secret() -> None:
    for workload in workloads():
        sources = pod_spec(workload)["containers"][0].get("envFrom", [])
        refs = {next(iter(s)): next(iter(s.values()))["name"] for s in sources}
        assert refs == {
            "configMapRef": "threadfold-config",
            "secretRef": "threadfold-secrets",
        }, workload["metadata"]["name"]


def test_every_k8s_container_runs_non_root_on_a_read_only_root_with_a_tmp_volume() -> None:
    for workload in workloads():
        name = workload["metadata"]["name"]
        spec = pod_spec(workload)
        assert spec["securityContext"]["runAsNonRoot"] is True, name
        assert spec["securityContext"]["runAsUser"] != 0, name
        tmp_volumes = {v["name"] for v in spec["volumes"] if "emptyDir" in v}
        for container in containers(workload):
            context = container["securityContext"]
            assert context["readOnlyRootFilesystem"] is True, name
            assert context["allowPrivilegeEscalation"] is False, name
            assert context["capabilities"]["drop"] == ["ALL"], name
            mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
            assert mounts.get("/tmp") in tmp_volumes, name  # noqa: S108


def test_every_k8s_container_requests_cpu_and_memory_and_limits_memory() -> None:
    for workload in workloads():
        for container in containers(workload):
            resources = container["resources"]
            assert {"cpu", "memory"} <= set(resources["requests"]), workload["metadata"]["name"]
            assert "memory" in resources["limits"], workload["metadata"]["name"]


def test_the_api_deployment_probes_liveness_on_healthz_and_readiness_on_readyz() -> None:
    (api,) = containers(k8s_object("Deployment", "threadfold-api"))
    assert api["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert api["readinessProbe"]["httpGet"]["path"] == "/readyz"
    probes = [api[p]["httpGet"]["path"] for p in api if p.endswith("Probe")]
    assert set(probes) <= ROUTE_PATHS


def test_the_api_listens_where_its_probes_service_and_settings_point(
    settings_from_env: Any,
) -> None:
    deployment = k8s_object("Deployment", "threadfold-api")
    (api,) = containers(deployment)
    settings: ApiSettings = settings_from_env(pod_env(deployment))
    ports = {p["name"]: p["containerPort"] for p in api["ports"]}
    assert ports == {"http": settings.port}
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        assert api[probe]["httpGet"]["port"] == "http", probe
    annotations = deployment["spec"]["template"]["metadata"]["annotations"]
    assert int(annotations["prometheus.io/port"]) == settings.port
    assert annotations["prometheus.io/path"] in ROUTE_PATHS
    service = k8s_object("Service", "threadfold-api")
    assert [p["targetPort"] for p in service["spec"]["ports"]] == ["http"]


def test_the_api_grace_period_outlasts_the_longest_read_wait(settings_from_env: Any) -> None:
    deployment = k8s_object("Deployment", "threadfold-api")
    settings: ApiSettings = settings_from_env(pod_env(deployment))
    assert pod_spec(deployment)["terminationGracePeriodSeconds"] > settings.max_wait_seconds


def test_the_service_and_disruption_budget_select_the_api_pods() -> None:
    labels = k8s_object("Deployment", "threadfold-api")["spec"]["template"]["metadata"]["labels"]
    selector = k8s_object("Service", "threadfold-api")["spec"]["selector"]
    pdb: Object = k8s_object("PodDisruptionBudget", "threadfold-api")["spec"]
    for wanted in (selector, pdb["selector"]["matchLabels"]):
        assert wanted.items() <= labels.items()
        assert wanted["app.kubernetes.io/component"] == "api"
    assert pdb.get("maxUnavailable") == 1 or pdb.get("minAvailable") is not None


def test_the_worker_grace_period_outlasts_the_longest_task(settings_from_env: Any) -> None:
    deployment = k8s_object("Deployment", "threadfold-worker")
    settings: Settings = settings_from_env(pod_env(deployment))
    grace = pod_spec(deployment)["terminationGracePeriodSeconds"]
    assert grace > settings.drain_seconds + settings.task_soft_time_limit
    assert grace > settings.task_time_limit
    (worker,) = containers(deployment)
    assert "lifecycle" not in worker  # SIGTERM is Celery's warm shutdown: no preStop


def test_the_worker_replica_count_is_left_to_the_autoscaler() -> None:
    assert "replicas" not in k8s_object("Deployment", "threadfold-worker")["spec"]


def test_k8s_runs_exactly_one_beat_and_replaces_it_by_recreate() -> None:
    beat = k8s_object("Deployment", "threadfold-beat")
    assert beat["spec"]["replicas"] == 1
    assert beat["spec"]["strategy"]["type"] == "Recreate"
    (container,) = containers(beat)
    assert argv(container["command"])[:2] == ["threadfold", "beat"]
    assert container["workingDir"] == "/tmp"  # noqa: S108  # beat's schedule file


def test_no_autoscaler_targets_the_api_or_beat_by_mistake() -> None:
    scalers = [o for o in k8s_objects() if o["kind"] in {"ScaledObject", "HorizontalPodAutoscaler"}]
    assert scalers
    assert {s["spec"]["scaleTargetRef"]["name"] for s in scalers} == {"threadfold-worker"}


def test_the_autoscaler_scales_workers_on_the_backlog_gauge() -> None:
    scaled = k8s_object("ScaledObject", "threadfold-worker")["spec"]
    assert scaled["minReplicaCount"] >= 1  # wake-ups need a worker to run them
    assert scaled["maxReplicaCount"] > scaled["minReplicaCount"]
    (trigger,) = scaled["triggers"]
    assert trigger["type"] == "prometheus"
    assert trigger["metadata"]["query"] == "max(threadfold_threads_with_backlog)"
    assert float(trigger["metadata"]["threshold"]) > 0


def test_the_backlog_gauge_the_autoscaler_reads_is_one_the_api_exports(redis_url: str) -> None:
    async def scrape() -> str:
        client = async_client(redis_url, cluster=False)
        try:
            return prom.render({}, await prom.gauges(client, Keyspace("tf", 4)))
        finally:
            await client.aclose()

    query = k8s_object("ScaledObject", "threadfold-worker")["spec"]["triggers"][0]["metadata"]
    (metric,) = re.findall(r"threadfold_[a-z_]+", query["query"])
    assert re.search(rf"^# TYPE {metric} gauge$", asyncio.run(scrape()), re.MULTILINE)

"""Static checks of the Kubernetes manifests in deploy/k8s/."""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess

from tests.deploy.manifests import (
    K8S,
    KUSTOMIZATION,
    PROJECT_IMAGE,
    SECRET_NAMES,
    LoadSettings,
    Object,
    argv,
    config_map_data,
    containers,
    k8s_files,
    k8s_object,
    k8s_objects,
    load,
    load_all_text,
    pod_env,
    pod_spec,
    secret_data,
    workloads,
)
from threadfold.api import metrics as prom
from threadfold.api.app import ROUTES
from threadfold.api.settings import ApiSettings
from threadfold.core.keys import Keyspace
from threadfold.workers import metrics as fleet_metrics
from threadfold.workers.redisio.client import async_client
from threadfold.workers.runtime.shared_broker import shares_state
from threadfold.workers.settings import Settings

ROUTE_PATHS = frozenset(path for path, *_ in ROUTES)


def test_every_k8s_file_is_listed_in_the_kustomization() -> None:
    kustomization = load(KUSTOMIZATION)
    listed = set(kustomization["resources"])
    assert listed == {path.name for path in k8s_files()}
    assert all((K8S / name).is_file() for name in listed)
    assert "namespace" not in kustomization  # namespace-agnostic
    assert [i["name"] for i in kustomization["images"]] == [PROJECT_IMAGE]


def test_the_kustomization_builds_with_kubectl() -> None:
    kubectl = shutil.which("kubectl")
    assert kubectl is not None, "kubectl is needed (.ci/run installs it)"
    built = subprocess.run(
        [kubectl, "kustomize", str(K8S)], capture_output=True, text=True, check=False, timeout=60
    )
    assert built.returncode == 0, built.stderr
    kinds = sorted(doc["kind"] for doc in load_all_text(built.stdout))
    assert kinds == sorted(o["kind"] for o in k8s_objects())


def test_no_k8s_object_pins_a_namespace() -> None:
    for obj in k8s_objects():
        assert "namespace" not in obj["metadata"], obj["metadata"]["name"]


def test_the_configmap_and_secret_load_as_api_settings(settings_from_env: LoadSettings) -> None:
    settings: ApiSettings = settings_from_env({**config_map_data(), **secret_data()})
    assert settings.host == "0.0.0.0"  # noqa: S104  # the pod's interface, by design
    assert settings.key_map()  # the placeholder keys parse


def test_the_configmap_holds_no_secret_setting() -> None:
    assert not set(config_map_data()) & SECRET_NAMES


def test_the_secret_holds_exactly_the_urls_and_api_keys() -> None:
    assert {
        "THREADFOLD_REDIS_URL",
        "THREADFOLD_BROKER_URL",
        "THREADFOLD_API_KEYS",
    } == SECRET_NAMES
    assert set(secret_data()) == SECRET_NAMES


def test_the_broker_is_never_on_the_state_redis(settings_from_env: LoadSettings) -> None:
    # On the state's Redis (any db) the broker shares its memory: a full state refuses
    # the broker's bookkeeping too (docs/operations.md, "Redis memory").
    for workload in workloads():
        settings: Settings = settings_from_env(pod_env(workload))
        assert settings.broker_url is not None, workload["metadata"]["name"]
        assert not shares_state(settings), workload["metadata"]["name"]


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
            assert mounts.get("/tmp") in tmp_volumes, name


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
    settings_from_env: LoadSettings,
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


def test_the_api_grace_period_outlasts_the_longest_read_wait(
    settings_from_env: LoadSettings,
) -> None:
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


def test_the_worker_grace_period_outlasts_the_longest_task(settings_from_env: LoadSettings) -> None:
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
    assert container["workingDir"] == "/tmp"  # beat's schedule file


def test_the_autoscalers_target_the_workers_and_the_api_never_beat() -> None:
    scalers = [o for o in k8s_objects() if o["kind"] in {"ScaledObject", "HorizontalPodAutoscaler"}]
    targets = sorted(s["spec"]["scaleTargetRef"]["name"] for s in scalers)
    assert targets == ["threadfold-api", "threadfold-worker"]  # one each; beat stays at one


def test_the_api_scales_on_cpu_and_leaves_its_replica_count_to_the_autoscaler() -> None:
    hpa = k8s_object("HorizontalPodAutoscaler", "threadfold-api")["spec"]
    assert "replicas" not in k8s_object("Deployment", "threadfold-api")["spec"]
    assert hpa["minReplicas"] >= 2  # the disruption budget keeps one of them serving
    (metric,) = hpa["metrics"]
    assert metric["resource"]["name"] == "cpu"  # (its target: tests/bench/test_scale_model.py)


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
            return prom.render({}, await fleet_metrics.gauges(client, Keyspace("tf", 4)))
        finally:
            await client.aclose()

    query = k8s_object("ScaledObject", "threadfold-worker")["spec"]["triggers"][0]["metadata"]
    (metric,) = re.findall(r"threadfold_[a-z_]+", query["query"])
    assert re.search(rf"^# TYPE {metric} gauge$", asyncio.run(scrape()), re.MULTILINE)

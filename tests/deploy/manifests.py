"""Readers for deploy/: YAML documents, compose services, Kubernetes objects, the Dockerfile.

Pure parsing, no Docker or Kubernetes: the manifests are checked statically.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped,unused-ignore]

from threadfold.api.settings import ApiSettings

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"
COMPOSE = DEPLOY / "docker-compose.yml"
COMPOSE_RABBITMQ = DEPLOY / "docker-compose.rabbitmq.yml"
DOCKERFILE = DEPLOY / "Dockerfile"
KUSTOMIZATION = K8S / "kustomization.yaml"

PROJECT_IMAGE = "ghcr.io/example/threadfold"
OFFICIAL_IMAGES = ("redis", "rabbitmq", "mher/flower")
SUBCOMMANDS = frozenset(
    {"api", "worker", "beat", "status", "up", "recompute", "retry", "loadtest", "bench", "demo"}
)

COMPOSE_FILES = [(COMPOSE,), (COMPOSE, COMPOSE_RABBITMQ)]

SETTING_NAMES = frozenset(f"THREADFOLD_{name.upper()}" for name in ApiSettings.model_fields)
SECRET_NAMES = frozenset(
    f"THREADFOLD_{name.upper()}"
    for name, field in ApiSettings.model_fields.items()
    if "SecretStr" in str(field.annotation)
)

Object = dict[str, Any]
LoadSettings = Callable[[Mapping[str, str]], ApiSettings]


def is_known_entry(command: list[str]) -> bool:
    """``threadfold <sub>``, ``python -m threadfold.api`` or
    ``celery -A threadfold.workers.runtime.worker ...``."""
    match command:
        case ["threadfold", sub, *_]:
            return sub in SUBCOMMANDS
        case ["python" | "python3", "-m", "threadfold.api", *_]:
            return True
        case ["celery", "-A" | "--app", "threadfold.workers.runtime.worker", *_]:
            return True
        case ["celery", "--app=threadfold.workers.runtime.worker", *_]:
            return True
    return False


def yaml_files() -> list[Path]:
    return sorted([*DEPLOY.rglob("*.yaml"), *DEPLOY.rglob("*.yml")])


def deploy_files() -> list[Path]:
    return sorted(path for path in DEPLOY.rglob("*") if path.is_file())


def load_all(path: Path) -> list[Any]:
    return list(yaml.safe_load_all(path.read_text()))


def load_all_text(text: str) -> list[Any]:
    return [doc for doc in yaml.safe_load_all(text) if doc is not None]


def load(path: Path) -> Object:
    documents = [doc for doc in load_all(path) if doc is not None]
    assert len(documents) == 1, f"{path} should hold one YAML document"
    document: Object = documents[0]
    return document


# ---- compose ----------------------------------------------------------------------


def compose_services(*paths: Path) -> dict[str, Object]:
    """Services of compose files merged in order (mappings merge, other values replace)."""
    merged: dict[str, Object] = {}
    for path in paths or (COMPOSE,):
        for name, service in load(path)["services"].items():
            merged[name] = _merge(merged.get(name, {}), service)
    return merged


def _merge(base: Object, override: Object) -> Object:
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def service_env(service: Object) -> dict[str, str]:
    """A service's environment as a mapping (compose allows a mapping or KEY=VALUE list)."""
    raw = service.get("environment") or {}
    if isinstance(raw, list):
        return dict(str(item).split("=", 1) for item in raw)
    return {str(key): "" if value is None else _text(value) for key, value in raw.items()}


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def argv(command: Any) -> list[str]:
    if command is None:
        return []
    if isinstance(command, str):
        return shlex.split(command)
    return [str(part) for part in command]


def is_project_image(image: str) -> bool:
    return image.split(":", 1)[0] == PROJECT_IMAGE


def seconds(duration: str | int | float) -> float:
    """A compose duration ("120s", "1m30s", "1h") in seconds."""
    if isinstance(duration, int | float):
        return float(duration)
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001, "us": 0.000001}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|us|h|m|s)", duration)
    assert parts and "".join(n + u for n, u in parts) == duration, f"bad duration {duration!r}"
    return sum(float(number) * units[unit] for number, unit in parts)


# ---- kubernetes -------------------------------------------------------------------


def k8s_files() -> list[Path]:
    return sorted(p for p in [*K8S.glob("*.yaml"), *K8S.glob("*.yml")] if p != KUSTOMIZATION)


def k8s_objects() -> list[Object]:
    return [doc for path in k8s_files() for doc in load_all(path) if doc is not None]


def k8s_object(kind: str, name: str) -> Object:
    found = [o for o in k8s_objects() if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(found) == 1, f"expected one {kind}/{name}, found {len(found)}"
    return found[0]


def pod_spec(workload: Object) -> Object:
    spec: Object = workload["spec"]["template"]["spec"]
    return spec


def containers(workload: Object) -> list[Object]:
    spec = pod_spec(workload)
    return [*spec.get("initContainers", []), *spec["containers"]]


def workloads() -> list[Object]:
    kinds = {"Deployment", "StatefulSet", "DaemonSet", "Job"}
    return [o for o in k8s_objects() if o["kind"] in kinds]


def config_map_data() -> dict[str, str]:
    data: dict[str, str] = k8s_object("ConfigMap", "threadfold-config")["data"]
    return data


def secret_data() -> dict[str, str]:
    data: dict[str, str] = k8s_object("Secret", "threadfold-secrets")["stringData"]
    return data


def pod_env(workload: Object) -> dict[str, str]:
    """The THREADFOLD_* environment a workload's first container sees."""
    env: dict[str, str] = {}
    container = pod_spec(workload)["containers"][0]
    for source in container.get("envFrom", []):
        if "configMapRef" in source:
            env.update(config_map_data())
        if "secretRef" in source:
            env.update(secret_data())
    for item in container.get("env", []):
        env[item["name"]] = str(item.get("value", ""))
    return env


# ---- Dockerfile -------------------------------------------------------------------


@dataclass(frozen=True)
class Instruction:
    keyword: str
    args: str


def dockerfile_stages(path: Path = DOCKERFILE) -> list[list[Instruction]]:
    """The Dockerfile's instructions, one list per stage (each starts with its FROM)."""
    stages: list[list[Instruction]] = []
    for line in _logical_lines(path.read_text()):
        keyword, _, args = line.partition(" ")
        instruction = Instruction(keyword.upper(), args.strip())
        if instruction.keyword == "FROM":
            stages.append([])
        assert stages, f"{instruction.keyword} before the first FROM"
        stages[-1].append(instruction)
    return stages


def _logical_lines(text: str) -> Iterator[str]:
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue  # comments may sit inside a continued instruction, as Docker allows
        if line.endswith("\\"):
            pending += line[:-1].strip() + " "
            continue
        yield pending + line
        pending = ""
    assert not pending, "the Dockerfile ends inside a continued line"


def env_assignments(instruction: Instruction) -> Mapping[str, str]:
    return dict(part.split("=", 1) for part in shlex.split(instruction.args) if "=" in part)

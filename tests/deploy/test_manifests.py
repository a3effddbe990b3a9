"""Checks across every file of deploy/: YAML parses, settings, commands and images exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.deploy.manifests import (
    COMPOSE_FILES,
    DEPLOY,
    OFFICIAL_IMAGES,
    PROJECT_IMAGE,
    SETTING_NAMES,
    argv,
    compose_services,
    containers,
    deploy_files,
    is_known_entry,
    is_project_image,
    load_all,
    workloads,
    yaml_files,
)


def relative(path: Path) -> str:
    return str(path.relative_to(DEPLOY))


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


@pytest.mark.parametrize("path", yaml_files(), ids=relative)
def test_every_yaml_file_parses(path: Path) -> None:
    documents = [doc for doc in load_all(path) if doc is not None]
    assert documents, f"{path} is empty"
    assert all(isinstance(doc, dict) for doc in documents)


@pytest.mark.parametrize("path", deploy_files(), ids=relative)
def test_every_threadfold_variable_in_deploy_names_a_setting(path: Path) -> None:
    names = set(re.findall(r"\bTHREADFOLD_[A-Z0-9_]+\b", path.read_text()))
    assert names <= SETTING_NAMES, f"not settings: {sorted(names - SETTING_NAMES)}"


@pytest.mark.parametrize(("where", "command"), project_commands(), ids=str)
def test_every_project_container_runs_an_existing_entry_point(
    where: str, command: list[str]
) -> None:
    assert is_known_entry(command), f"{where}: {command}"


def test_worker_commands_pass_an_integer_concurrency() -> None:
    for where, command in project_commands():
        if command[:2] == ["threadfold", "worker"] and "--concurrency" in command:
            value = command[command.index("--concurrency") + 1]
            assert value.isdigit() and int(value) >= 1, where


@pytest.mark.parametrize(("where", "image"), all_images(), ids=str)
def test_every_image_is_the_project_image_or_an_official_one(where: str, image: str) -> None:
    name, _, tag = image.partition(":")
    assert name == PROJECT_IMAGE or name in OFFICIAL_IMAGES, f"{where}: {image}"
    assert tag and tag != "latest", f"{where}: pin a tag, not {image!r}"

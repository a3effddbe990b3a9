"""Static checks of deploy/Dockerfile (a few hadolint rules, and what the manifests rely on)."""

from __future__ import annotations

import re
import shlex

from tests.deploy.manifests import (
    DEPLOY,
    Instruction,
    dockerfile_stages,
    env_assignments,
)

STAGES = dockerfile_stages()
FINAL = STAGES[-1]
STAGE_NAMES = {stage[0].args.split()[-1] for stage in STAGES if " as " in stage[0].args.lower()}


def instructions(keyword: str, stage: list[Instruction] = FINAL) -> list[Instruction]:
    return [i for i in stage if i.keyword == keyword]


def test_the_dockerfile_is_multi_stage_on_pinned_python_slim() -> None:
    assert len(STAGES) >= 2
    assert FINAL[0].args == "python:3.11-slim"


def test_every_base_image_is_pinned_and_never_latest() -> None:
    for stage in STAGES:
        image = stage[0].args.split()[0]
        if image in STAGE_NAMES:
            continue
        tag = image.partition(":")[2]
        assert tag or "@sha256:" in image, f"unpinned base image {image}"
        assert tag.split("@")[0] != "latest", f"base image {image} uses latest"


def test_the_dockerfile_adds_nothing_from_urls() -> None:
    for stage in STAGES:
        for add in instructions("ADD", stage):
            assert not re.search(r"\bhttps?://", add.args), add.args


def test_apt_installs_skip_recommends_and_clean_up() -> None:
    for stage in STAGES:
        for run in instructions("RUN", stage):
            if "apt-get install" in run.args:
                assert "--no-install-recommends" in run.args
                assert "rm -rf /var/lib/apt/lists" in run.args


def test_the_builder_installs_the_project_and_the_final_stage_copies_it() -> None:
    builders = [s for s in STAGES[:-1] if any("pip install ." in r.args for r in s)]
    assert builders, "no stage runs `pip install .`"
    builder_name = builders[0][0].args.split()[-1]
    copies = [c.args for c in instructions("COPY") if c.args.startswith("--from=")]
    assert any(c.startswith(f"--from={builder_name} /opt/venv") for c in copies), copies
    path = " ".join(i.args for i in instructions("ENV"))
    assert "/opt/venv/bin" in path


def test_the_final_stage_runs_as_a_non_root_user() -> None:
    users = instructions("USER")
    assert users, "no USER in the final stage"
    user = users[-1].args.split(":")[0]
    assert user not in {"root", "0"}
    assert user.isdigit(), "a numeric uid lets Kubernetes verify runAsNonRoot"


def test_the_final_stage_checks_health_on_healthz_with_python() -> None:
    (check,) = instructions("HEALTHCHECK")
    _, _, command = check.args.partition("CMD ")
    assert "/healthz" in command
    argv = shlex.split(command)
    assert argv[:2] == ["python", "-c"]
    compile(argv[2], "HEALTHCHECK", "exec")


def test_the_image_serves_the_api_on_all_interfaces_by_default() -> None:
    env: dict[str, str] = {}
    for instruction in instructions("ENV"):
        env.update(env_assignments(instruction))
    assert env["THREADFOLD_HOST"] == "0.0.0.0"  # noqa: S104  # inside a container
    assert instructions("EXPOSE")[-1].args == env["THREADFOLD_PORT"] == "8000"
    assert instructions("CMD")[-1].args == '["threadfold", "api"]'


def test_the_build_context_ignores_the_venv_tests_and_vcs() -> None:
    ignored = (DEPLOY / "Dockerfile.dockerignore").read_text().split()
    assert {".git", ".venv", "tests"} <= set(ignored)
    assert not {"core", "workers", "api", "pyproject.toml"} & set(ignored)

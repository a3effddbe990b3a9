"""Static checks of deploy/Dockerfile (a few hadolint rules, and what the manifests rely on)."""

from __future__ import annotations

import ast
import re
import shlex
import subprocess
import sys

from tests.deploy.manifests import (
    DEPLOY,
    Instruction,
    dockerfile_stages,
    env_assignments,
)
from tests.packaging.builds import BUILD_FILES, PACKAGE, clean_env, link_targets
from tests.workers.harness import ROOT

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


def _smoke_check() -> list[str]:
    """The builder's ``python ... -c`` after ``pip install .``, as an argv."""
    builder = next(s for s in STAGES[:-1] if any("pip install ." in r.args for r in s))
    (install,) = [r for r in builder if "pip install ." in r.args]
    smoke = [c.strip() for c in install.args.split("&&") if c.strip().startswith("python ")]
    assert smoke, f"no python smoke check after pip install: {install.args}"
    return shlex.split(smoke[0])


def test_the_builder_smoke_imports_the_install_and_only_threadfold_is_top_level() -> None:
    """The check imports what was installed (-P: not the source tree in the working
    folder), the API and the tasks by their threadfold names, and fails if core/,
    workers/, api/ or loadtests/ are importable by their bare names."""
    argv = _smoke_check()
    flags = argv[1 : argv.index("-c")]
    assert {"-P", "-I"} & set(flags), f"the check would import the source tree: {argv}"
    code = argv[argv.index("-c") + 1]
    imported = {
        alias.name
        for node in ast.walk(ast.parse(code))
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    assert {"threadfold.api.server", "threadfold.workers.runtime.tasks"} <= imported, imported
    for internal in link_targets():
        assert repr(internal) in code, f"the check does not look for a top-level {internal}"


def test_the_builder_smoke_check_passes_here_and_fails_on_the_source_tree() -> None:
    """Run from the repository root, as the builder runs it from /src: it passes (the dev
    venv's threadfold is importable, core/ is not on the path); without -P the source
    tree's core/ is found and it fails, which is why the flag is there."""
    argv = _smoke_check()
    code = argv[argv.index("-c") + 1]
    python = [sys.executable, *argv[1 : argv.index("-c")], "-c", code]
    done = subprocess.run(
        python, cwd=ROOT, env=clean_env(), capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    bare = [sys.executable, "-c", code]
    done = subprocess.run(
        bare, cwd=ROOT, env=clean_env(), capture_output=True, text=True, check=False
    )
    assert done.returncode != 0 and "AssertionError" in done.stderr, done.stderr


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
    lines = (DEPLOY / "Dockerfile.dockerignore").read_text().splitlines()
    ignored = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    assert {".git", ".venv", "tests"} <= set(ignored)
    # What the build reads: threadfold/ (its links are kept by COPY), the folders it
    # links to, pyproject.toml and the readme it names.
    needed = {PACKAGE, *link_targets(), *BUILD_FILES}
    assert not needed & set(ignored), needed & set(ignored)

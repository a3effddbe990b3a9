"""The configuration page's table is the one the settings object generates, the README
names the two commands and links a newcomer's first questions, and the architecture's
map names only files that exist. (Links, length and wording: tests/test_doc_links.py.)"""

from __future__ import annotations

import re
from pathlib import Path

from threadfold.api.settings import markdown_table
from threadfold.workers.ops.cli import BENCHMARKS

README = Path(__file__).resolve().parent.parent / "README.md"
ARCHITECTURE = README.parent / "docs" / "architecture.md"
CONFIGURATION = README.parent / "docs" / "configuration.md"


def test_the_configuration_table_is_generated_from_the_settings() -> None:
    text = CONFIGURATION.read_text()
    start, end = "<!-- settings:start -->\n", "<!-- settings:end -->"
    table = text[text.index(start) + len(start) : text.index(end)].strip()
    assert table == markdown_table(), "regenerate it: python -m threadfold.api.settings"


def test_the_readme_names_the_two_commands_of_a_fresh_machine() -> None:
    text = README.read_text()
    assert "make run" in text and "make test" in text
    assert "make test" in (README.parent / ".ci" / "run").read_text()


def test_the_readme_links_a_newcomers_first_questions() -> None:
    # Bulk loads, a Redis failover and the figures against LangGraph on Postgres.
    links = set(re.findall(r"\]\(([^)#\s]+)", README.read_text()))
    wanted = {"docs/bulk-load.md", "docs/failover.md", "docs/benchmarks.md", "docs/README.md"}
    assert wanted <= links, wanted - links


def _the_map() -> str:
    """docs/architecture.md's opening map: from its heading to the next one."""
    text = ARCHITECTURE.read_text()
    start = text.index("## The map\n")
    return text[start : text.index("\n## ", start)]


def test_the_architecture_opens_with_a_map_of_one_screen() -> None:
    first = re.search(r"^## .*$", ARCHITECTURE.read_text(), re.MULTILINE)
    assert first is not None and first.group() == "## The map"
    assert len(_the_map().strip().splitlines()) <= 50


def test_every_path_the_map_names_exists() -> None:
    # A file or folder in backticks (`workers/storage/store.py`, `workers/storage/`, a .lua
    # script) is a path from the repository's top: a move or a rename must update the map.
    # A route (`/metrics`) starts with a slash and is not one.
    paths = [
        name
        for name in re.findall(r"`([^`]+)`", _the_map())
        if re.fullmatch(r"[\w.-]+(/[\w.-]+)*/?", name)
        and ("/" in name or name.endswith((".py", ".lua")))
    ]
    assert len(paths) > 40, paths  # the map is read, not skipped
    missing = [name for name in paths if not (README.parent / name).exists()]
    assert not missing, f"named in docs/architecture.md's map, not in the repository: {missing}"


def test_the_map_names_every_script_of_the_data_model() -> None:
    storage = README.parent / "workers" / "storage"
    scripts = {path.stem for path in storage.glob("*.lua")} - {"common", "state"}
    the_map = _the_map()
    unnamed = [name for name in sorted(scripts) if not re.search(rf"\b{name}\b", the_map)]
    assert not unnamed, f"scripts of workers/storage/ the map does not name: {unnamed}"


def test_every_figure_of_the_benchmarks_page_names_a_benchmark_that_exists() -> None:
    # A figure a reader cannot reproduce is a claim: each row of a figures table ends in
    # the command that measures it, and every benchmark of `threadfold bench` backs one.
    text = (README.parent / "docs" / "benchmarks.md").read_text()
    rows, named = 0, set()
    in_figures = False
    for line in text.splitlines():
        if line.startswith("| measure |"):
            in_figures = line.rstrip(" |").endswith("command")
            continue
        if not line.startswith("| ") or line.startswith("|---"):
            in_figures = in_figures and line.startswith("|")
            continue
        if in_figures:
            rows += 1
            command = line.rstrip(" |").rsplit("|", 1)[-1]
            found = re.search(r"`(?:threadfold bench|python -m bench\.)\s*(\w+)", command)
            assert found, f"no command in the row: {line[:80]}"
            assert found.group(1) in BENCHMARKS, f"no benchmark {found.group(1)!r}: {line[:80]}"
            named.add(found.group(1))
    assert rows > 50, rows
    assert set(BENCHMARKS) - {"ab"} <= named, set(BENCHMARKS) - named

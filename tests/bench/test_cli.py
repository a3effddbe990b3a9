"""``threadfold bench``: it lists every benchmark of bench/ and passes its arguments on
to ``python -m bench.NAME``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bench import ab
from threadfold.workers.ops import cli


def test_the_help_lists_every_benchmark_and_the_ab() -> None:
    assert set(cli.BENCHMARKS) == {*ab.benchmarks(), "ab"}


def test_the_help_shows_a_line_for_each(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["bench", "--help"])
    shown = capsys.readouterr().out
    for name, line in cli.BENCHMARKS.items():
        assert f"  {name:<11} {line}" in shown


def test_a_benchmarks_own_options_reach_it() -> None:
    args = cli._parser().parse_args(["bench", "redis", "--instructions", "--quick"])
    assert (args.which, args.args) == ("redis", ["--instructions", "--quick"])
    args = cli._parser().parse_args(["bench", "ab", "core", "--base", "HEAD", "--", "--x"])
    assert (args.which, args.args) == ("ab", ["core", "--base", "HEAD", "--", "--x"])


def test_a_benchmark_runs_with_its_arguments(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ab.ROOT)
    monkeypatch.setenv("PYTHONPATH", str(ab.ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = tmp_path / "context.json"
    assert cli.main(["bench", "context", "--quick", "--out", str(out)]) == 0
    assert json.loads(out.read_text())["meta"]["mode"] == "quick"

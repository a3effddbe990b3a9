"""The generic A/B driver (``python -m bench.ab``): its arithmetic, and real runs of the
quickest benchmark on two real trees (HEAD in a temporary worktree against this
checkout). No timing is asserted: both sides may be the same code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import ab


def test_every_number_is_a_leaf_by_its_dotted_path() -> None:
    data = {"a": 1, "b": {"c": 2.5, "d": [3, {"e": 4}]}, "f": True, "g": "x", "h": None}
    assert ab.leaves(data) == {"a": 1.0, "b.c": 2.5, "b.d.0": 3.0, "b.d.1.e": 4.0}


def test_a_leaf_is_the_median_per_side_and_of_the_rounds_ratios() -> None:
    rounds = [({"x": 10.0, "z": 0.0, "only": 1.0}, {"x": 11.0, "z": 1.0}),
              ({"x": 20.0, "z": 0.0, "only": 1.0}, {"x": 18.0, "z": 2.0}),
              ({"x": 30.0, "z": 0.0, "only": 1.0}, {"x": 36.0, "z": 3.0})]
    found = ab.compare(rounds)
    assert set(found) == {"x", "z"}  # a leaf missing on one side is not compared
    assert (found["x"].base, found["x"].head, found["x"].ratio) == (20.0, 18.0, 1.1)
    assert found["z"].ratio is None  # no ratio to a base of 0
    assert set(ab.compare(rounds, ["y*", "x"])) == {"x"}


def test_head_against_this_checkout_reports_both_sides_and_their_ratios(
        tmp_path: Path) -> None:
    out = tmp_path / "ab.json"
    assert ab.main(["context", "--base", "HEAD", "--rounds", "2", "--quick",
                    "--keys", "summary.*", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    head = ab.git("rev-parse", "HEAD")
    assert data["base"]["commit"] == data["head"]["commit"] == head
    assert data["base"]["changed"]  # bench/ copied over the base's
    assert data["order"] == ["base head", "head base"]
    assert [(r["round"], r["side"]) for r in data["runs"]] == [
        (0, "base"), (0, "head"), (1, "head"), (1, "base")]
    leaves = data["leaves"]
    assert leaves and all(key.startswith("summary.") for key in leaves)
    for key, leaf in leaves.items():
        assert leaf["base"] > 0 and leaf["head"] > 0, key
        assert len(leaf["ratios"]) == 2 and leaf["ratio"] > 0, key
    assert "threadfold-ab-" not in ab.git("worktree", "list")


def test_a_side_whose_benchmark_fails_fails_the_ab(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "ab.json"
    assert ab.main(["context", "--base", "HEAD", "--head", "HEAD", "--rounds", "1",
                    "--out", str(out), "--", "--no-such-option"]) == 1
    assert not out.exists()
    assert "base (HEAD) exited 2" in capsys.readouterr().err
    assert "threadfold-ab-" not in ab.git("worktree", "list")

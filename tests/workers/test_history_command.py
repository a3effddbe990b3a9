"""The long history check's command on a few seconds: the stack ``threadfold up``
starts, a run with no wrong answer, and the results file (operations and answers by
kind, wrong answers) it writes."""

from __future__ import annotations

import json
from pathlib import Path

from tests.history import main as history_check


def test_a_short_run_writes_its_counts_and_finds_no_wrong_answer(tmp_path: Path) -> None:
    out = tmp_path / "history.json"
    assert history_check.main(["--minutes", "0.1", "--drivers", "3", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["wrong_answers"] == 0 and data["wrong"] == []
    assert data["operations"] == sum(data["operations_by_kind"].values()) > 0
    assert data["answers_by_kind"]["write 202"] > 0
    assert data["meta"]["settings"]["retention_seconds"] > 0

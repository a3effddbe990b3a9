"""The context benchmark's correctness path on small sizes: a real redis-server, both
threads folded, every window checked against the whole state's and LangChain's. No
timing is asserted; the report and the JSON are written."""

from __future__ import annotations

import json
from pathlib import Path

from bench.context import main as context_bench


def test_the_quick_run_checks_every_window_and_writes_its_figures(tmp_path: Path) -> None:
    out = tmp_path / "context.json"
    assert context_bench.main(["--quick", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["failures"] == [] and data["meta"]["mode"] == "quick"
    assert data["tokens"]["short"] > context_bench.BUDGET  # both reads are full windows
    assert len(data["rounds"]) == context_bench.QUICK.rounds
    for read, _ in context_bench.READS:
        figures = data["summary"][read]
        assert figures["client_cpu_us"]["short"] > 0 and figures["redis_cpu_us"]["long"] > 0
    assert set(data["target"]) >= {"name", "goal", "value", "passed"}

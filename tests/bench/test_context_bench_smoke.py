"""The context benchmark's correctness path on small sizes: a real redis-server, both
threads folded, every window checked against the whole state's and LangChain's. No
timing is asserted: the figures are there and positive, the report and the JSON are
written."""

from __future__ import annotations

import json
from pathlib import Path

from bench.context import main as context_bench
from bench.context.report import FIGURES


def test_the_quick_run_checks_every_window_and_writes_its_figures(tmp_path: Path) -> None:
    out = tmp_path / "context.json"
    assert context_bench.main(["--quick", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["failures"] == [] and data["meta"]["mode"] == "quick"
    assert data["tokens"]["short"] > context_bench.BUDGET  # both reads are full windows
    assert data["tokens"]["long"] > data["tokens"]["short"]
    assert sum(data["mix"]["long"].values()) == context_bench.QUICK.long
    assert {"system", "human", "ai", "tool"} <= set(data["mix"]["short"])
    assert len(data["rounds"]) == context_bench.QUICK.rounds
    for read, _ in context_bench.READS:
        for figure in (*FIGURES, "script_calls"):
            medians = data["summary"][read][figure]
            assert medians["short"] > 0 and medians["long"] > 0 and medians["ratio"] > 0
    assert all(n > 0 for n in data["reply_bytes"].values())
    today = data["today"]
    assert today["wall_ms"] > 0 and today["client_cpu_us"] > 0 and today["sent_bytes"] > 0
    assert set(today["phases_ms"]) == {"state", "convert", "trim"}
    assert set(data["target"]) >= {"name", "goal", "value", "passed"}

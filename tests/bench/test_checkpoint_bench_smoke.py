"""The checkpoint benchmark's correctness path on small sizes: LangGraph's checkpoints
in the machine's PostgreSQL (a database of the benchmark's own, dropped after) and in
threadfold (real Redis, Celery workers and an API). Every read's messages are checked
against the graph's, every agent round's final states against each other. No timing is
asserted: the figures are there and positive, the report and the JSON are written."""

from __future__ import annotations

import json
from pathlib import Path

from bench.checkpoint import main as checkpoint_bench


def test_the_quick_run_checks_every_read_and_writes_its_figures(tmp_path: Path) -> None:
    out = tmp_path / "checkpoint.json"
    assert checkpoint_bench.main(["--quick", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    quick = checkpoint_bench.QUICK
    assert data["failures"] == [] and data["meta"]["mode"] == "quick"
    savers = {r["saver"] for r in data["depth"]}
    assert len(savers) == 3 and "postgres" in savers
    assert any(s.endswith("-walk") for s in savers)
    for depth in quick.depths:
        rows = [r for r in data["depth"] if r["depth"] == depth]
        assert {r["saver"] for r in rows} == savers
        for r in rows:  # the three savers' messages: each equal to the graph's
            assert r["matches"] and r["messages"] == depth + 1
            assert r["wall_ms"] > 0 and r["client_cpu_us"] > 0 and r["reads"] >= 1
        postgres = next(r for r in rows if r["saver"] == "postgres")
        assert postgres["trips"] >= 2 and postgres["bytes_out"] > 0
        assert postgres["writes"] == depth + 1 and not postgres["seeded"]
    assert {(r["length"], r["channel"]) for r in data["agent"]} == {
        (n, c) for n in quick.prefills for c in ("add_messages", "DeltaChannel")}
    for r in data["agent"]:
        assert r["states_compared"] == quick.rounds
        assert r["rate"] > 0 and r["steps"] > 0 and r["client_cpu_us"] > 0
    assert len(data["targets"]) >= 4
    assert all({"name", "goal", "value", "passed"} <= set(t) for t in data["targets"])

"""The replay benchmark's correctness path on tiny sizes: a real redis-server, forked
replaying processes. No timing is asserted: every run must have replayed every delta,
found exactly the differences it was given, and a rebuild must have restored every
thread; a run that did not is reported as wrong, and the report and JSON are written."""

from __future__ import annotations

import json
from pathlib import Path

from bench.replay import main as replay_bench
from bench.replay.workload import Shape

TINY = replay_bench.Sizes(shapes=(Shape(12, 5), Shape(2, 60)), processes=(1, 2), rounds=1)


def test_every_run_replays_every_delta_and_rebuilds_restore_the_states() -> None:
    rows, machine = replay_bench.measure(TINY, lambda message: None)
    assert len(rows) == 2 * 2 * 3  # shapes x process counts x (audit, rebuild twice)
    assert [r for r in rows if r["check"] != "ok"] == []
    assert {r["deltas"] for r in rows if r["shape"] == TINY.shapes[0].name} == {60}
    differing = [r for r in rows if r["op"] == replay_bench.DIFFERING]
    assert all(r["differing"] == r["threads"] == r["rebuilt"] for r in differing)
    assert "cores" in machine


def test_the_report_and_the_json_are_written(tmp_path: Path) -> None:
    out = tmp_path / "replay.json"
    assert replay_bench.main(["--quick", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["meta"]["mode"] == "quick" and data["runs"]
    assert set(data["target"]) >= {"name", "goal", "value", "passed"}

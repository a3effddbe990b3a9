"""The peer benchmark's correctness path on small sizes: LangGraph on the machine's
PostgreSQL (a database of the benchmark's own, dropped after) and threadfold on real
Redis, Celery workers and an API; every final state checked equal across the four
contenders. No timing is asserted: the figures are there and positive, the report and
the JSON are written."""

from __future__ import annotations

import json
from pathlib import Path

from bench.peer import main as peer_bench
from bench.peer.sides import KINDS


def test_the_quick_run_checks_every_state_and_writes_its_figures(tmp_path: Path) -> None:
    out = tmp_path / "peer.json"
    assert peer_bench.main(["--quick", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["failures"] == [] and data["meta"]["mode"] == "quick"
    assert [s["shape"]["length"] for s in data["shapes"]] == [q.length for q in peer_bench.QUICK]
    for shape, quick in zip(data["shapes"], peer_bench.QUICK, strict=True):
        assert set(shape["median"]) == set(KINDS)
        for kind, m in shape["median"].items():
            threads = quick.peer_threads if kind.startswith("langgraph") else quick.threads
            assert m["deltas"] == threads * quick.per_thread
            assert m["rate"] > 0 and m["writer_cpu_us"] > 0 and m["visible_p99_ms"] > 0
            assert m["service_cpu_us"] >= 0  # PostgreSQL's backends counted while alive
    assert len(data["targets"]) == 2 * len(peer_bench.QUICK)
    assert all({"name", "goal", "value", "passed"} <= set(t) for t in data["targets"])

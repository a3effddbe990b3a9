"""The lifecycle benchmark on a tiny size: a real redis-server per variant, threads
loaded and folded, searched, expired and swept. No timing or memory figure is asserted:
every check passed (states equal the oracle's, every search right, every thread swept
and no key of one left), and the figures, the report and the JSON are there."""

from __future__ import annotations

import json
from pathlib import Path

from bench.lifecycle import main as lifecycle_bench


def test_a_tiny_run_loads_searches_and_sweeps_every_thread(tmp_path: Path) -> None:
    out = tmp_path / "lifecycle.json"
    assert lifecycle_bench.main(["--quick", "--threads", "300", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert [(r["threads"], r["metadata"]) for r in data["runs"]] == [(300, False), (300, True)]
    for run in data["runs"]:
        assert [c for c in run["checks"] if c["detail"] != "ok"] == []
        assert run["bytes_per_thread"] > 0 and run["sweep"]["removed"] == 300
        assert bool(run["search"]) == run["metadata"]  # searched with metadata only
    assert set(data["target"]) >= {"name", "goal", "value", "passed"}

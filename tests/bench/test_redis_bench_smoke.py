"""The Redis budget benchmark on its quick size: every path runs on a real redis-server,
its threads hold what was sent to them, and every row has its figures. No timing is
asserted."""

from __future__ import annotations

import json
from pathlib import Path

from bench.redis import main as redis_bench


def test_the_quick_run_measures_every_path_and_checks_its_threads(tmp_path: Path) -> None:
    out = tmp_path / "redis.json"
    assert redis_bench.main(["--quick", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["failures"] == [] and data["meta"]["mode"] == "quick"
    rows = {r["path"]: r for r in data["rows"]}
    assert len(rows) == 8
    for path, row in rows.items():
        assert row["commands"] > 0 and row["redis_cpu_us"] > 0, path
        if not path.startswith(("floor", "read state")):  # a whole read: no script
            assert row["by_script_us"], path  # the script log named its scripts
    assert rows["floor: pipelined XADD + HSET"]["commands"] == 2

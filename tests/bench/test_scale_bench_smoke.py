"""The scale and failover benchmarks' correctness paths in their quick modes: real
cluster nodes, Celery workers, a primary and its replica; every sampled state checked
against the one-delta-at-a-time fold, and no acknowledged delta lost with durability
'replica'. No timing is asserted: the figures are there, the report and JSON written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.failover import main as failover_bench
from bench.scale import main as scale_bench

pytestmark = pytest.mark.slow


def test_the_quick_scale_run_measures_every_point_and_checks_its_states(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "scale.json"
    assert scale_bench.main(["--quick", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    sizes = scale_bench.QUICK
    points = {(r["primaries"], r["workers"]) for r in data["grid"]}
    assert points == {(m, w) for m in sizes.primaries for w in sizes.workers}
    for r in data["grid"]:
        assert r["check"]["ok"] and r["total_us"] > 0 and 0 < r["commits_per_delta"] <= 1
        assert len(r["nodes_us"]) == r["primaries"]
    assert data["hot"]["batch"]["check"]["ok"]
    assert {"alone", *(name for name, _, _ in scale_bench.FLOODS)} <= set(data["tenants"])
    # the share holds the flood near it (its bursts aside)
    held = data["tenants"]["flooded, share"]["flood_rate"]
    assert held < 2 * sizes.flood_share
    assert "## A flooding tenant" in capsys.readouterr().out


def test_the_quick_failover_run_loses_nothing_acknowledged_with_replica_durability(
    tmp_path: Path,
) -> None:
    out = tmp_path / "failover.json"
    assert failover_bench.main(["--quick", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    failovers = [r for part in failover_bench.FAILOVERS for r in data[part]]
    assert {r["mode"] for r in failovers} == {"primary", "replica"}
    assert all(r["lost"] == 0 for r in failovers if r["mode"] == "replica")
    assert all(r["acked"] > 0 for r in failovers)

"""The budget benchmark's correctness path in its quick mode: real Redis servers, Celery
workers and an API process; every part run, every state checked against the
one-delta-at-a-time fold (and a sample against LangGraph's add_messages), the floor's
fold against the stored threads. No timing is asserted: the figures are there, the
report and the JSON are written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.budget import main as budget_bench
from bench.budget.report import ROWS, TOTALS, summarize

FLOORS = ("encode_us", "write_client_us", "write_redis_us", "healthz_api_us",
          "healthz_client_us", "decode_fold_us")


def test_the_quick_run_checks_every_state_and_reports_every_part(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "budget.json"
    assert budget_bench.main(["--quick", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["failures"] == [] and data["meta"]["mode"] == "quick"
    sizes = budget_bench.QUICK
    assert len(data["rounds"]) == sizes.rounds
    assert sum(data["ops"].values()) == sizes.threads * sizes.per_thread
    assert set(data["ops"]) == {"append", "update", "remove"}
    # Each round ran every part once, the parts' order rotated from round to round.
    assert len({tuple(r["order"]) for r in data["rounds"]}) == sizes.rounds
    for r in data["rounds"]:
        assert sorted(r["order"]) == sorted(budget_bench.PARTS)
        for part in ("direct", "http"):
            assert r[part]["deltas"] == sizes.threads * sizes.per_thread
            assert r[part]["cpu_us_per_delta"]["here"] > 0
        assert r["floors"]["healthz_not_ok"] == 0
        assert all(r["floors"][k] > 0 for k in FLOORS)
    rows = data["summary"]["rows"]
    assert [row["part"] for row in rows] == [n for n, _, _ in ROWS] + [n for n, _ in TOTALS]
    for row in rows:
        assert row["cpu_us"]["min"] <= row["cpu_us"]["median"] <= row["cpu_us"]["max"]
    assert all(row["cpu_us"]["median"] > 0 and row["ratio"] > 0 for row in rows[-2:])
    report = capsys.readouterr().out
    assert "| part | CPU per delta µs | floor µs | ratio to floor |" in report
    assert "Load average" in report and "State check: every thread equals" in report


def _round(scale: float) -> dict[str, Any]:
    cpu = {"here": 100 * scale, "api": 300 * scale, "workers": 50 * scale,
           "redis": 40 * scale, "broker": 5 * scale, "beat": 0.0}
    part = {"cpu_us_per_delta": cpu, "deltas": 10, "settled_seconds": 1.0,
            "sent_per_s": 10.0, "settled_per_s": 10.0}
    return {"direct": part, "http": part, "floors": dict.fromkeys(FLOORS, 10.0 * scale)}


def test_a_row_gives_the_median_round_and_the_median_of_the_rounds_ratios() -> None:
    summary = summarize([_round(1.0), _round(3.0), _round(2.0)],
                        {"workers": 1.0, "redis": 0.0, "broker": 0.0})
    producer, api = summary["rows"][0], summary["rows"][1]
    assert producer["cpu_us"] == {"median": 200.0, "min": 100.0, "max": 300.0}
    assert producer["floor_us"] == 40.0 and producer["ratio"] == 5.0  # encode + write
    assert api["ratio"] == 30.0
    broker = summary["rows"][4]
    assert broker["floor_us"] is None and broker["ratio"] is None
    # 1 ms/s of idle workers over a 1 s window of 10 deltas: 100 µs a delta.
    assert summary["idle_us_per_delta"]["direct"]["workers"] == 100.0

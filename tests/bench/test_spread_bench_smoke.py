"""The spread benchmark's correctness path in its quick mode: two real stacks (the
client's: Redis, broker, Celery workers; the outside one: the same with beat and an
API process), sender processes over HTTP and bare to Redis; every state checked
against the one-delta-at-a-time fold, every bare entry counted. No timing is asserted:
the figures are there, the targets judged, the report and the JSON written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.spread import main as spread_bench
from bench.spread.senders import Share, items


def test_the_quick_run_checks_every_state_and_reports_both_parts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "spread.json"
    assert spread_bench.main(["--quick", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    sizes = spread_bench.QUICK
    assert data["failed_checks"] == [] and data["meta"]["mode"] == "quick"
    assert {"cores", "load_before_after", "code", "redis"} <= set(data["meta"])
    # The client part: every repeat of the spread shape, its states checked.
    client = data["client"]
    shape = sizes.client
    assert len(client["repeats"]) == len(client["runs"]) == shape.repeats
    for repeat in client["repeats"]:
        assert repeat["deltas"] == shape.threads * shape.per_thread and repeat["checked"]
        assert repeat["rate"] > 0 and repeat["cpu_us_per_delta"]["total"] > 0
        assert 0 < repeat["commits_per_delta"] <= 1
    assert all(r["config"]["run"] == 1 and r["config"]["bulk"] == shape.bulk
               for r in client["runs"])
    lag = client["lag"]
    assert lag["deltas"] > 0 and lag["unresolved"] == 0 and lag["check"]["ok"]
    assert lag["config"]["run"] == 1 and lag["config"]["rate"] == pytest.approx(
        client["rate"] / 2)
    assert lag["p50_ms"] <= lag["p95_ms"] <= lag["p99_ms"]
    # The outside part: every round ran both, the order alternated, the states checked.
    rounds = data["outside"]["rounds"]
    assert len(rounds) == sizes.rounds
    assert [r["order"] for r in rounds] == [["http", "bare"], ["bare", "http"]][: sizes.rounds]
    for r in rounds:
        assert r["http"]["deltas"] == r["bare"]["deltas"] == sizes.outside.deltas
        assert r["http"]["visible_per_s"] > 0 and r["bare"]["per_s"] > 0 and r["ratio"] > 0
    assert sum("equal the one-at-a-time fold" in c["name"] for c in data["checks"]) == (
        shape.repeats + 1 + sizes.rounds + 1)  # + the lag run, + the warm round
    assert [t["goal"] for t in data["targets"]] == [">= 40,000 deltas/s", "< 50 ms", ">= 0.15"]
    report = capsys.readouterr().out
    assert "## Targets" in report and "| **median** |" in report
    assert "State check: all" in report


def test_a_bulk_carries_one_delta_of_each_of_its_threads_and_senders_share_none() -> None:
    shares = [Share(threads=40, per_thread=3, bulk=10, senders=2, sender=s, seed=1)
              for s in range(2)]
    bulks = [items(share, "p") for share in shares]
    threads = [{d["thread_id"] for bulk in mine for d in bulk} for mine in bulks]
    assert not threads[0] & threads[1] and len(threads[0] | threads[1]) == 40
    for mine in bulks:
        assert all(len({d["thread_id"] for d in bulk}) == len(bulk) == 10 for bulk in mine)
        assert sum(map(len, mine)) == 20 * 3
    # The same seed makes the same bytes: the bare run sends what the HTTP run sent.
    assert items(shares[0], "p") == bulks[0]
    with pytest.raises(ValueError, match="not whole bulks"):
        Share(threads=30, per_thread=1, bulk=10, senders=2, sender=0, seed=1)

"""The benchmark's own correctness checks, on tiny sizes (no timing is asserted)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage

from bench.common.checks import first_difference, same_state
from bench.common.inputs import Workload, appends, batches, mix, updates
from bench.common.timing import Repeats
from bench.core import main as core_bench
from bench.core.folds import TRACKED, WORKER, Prepared
from threadfold import core

ONCE = Repeats(least=1, most=1, budget_s=0.0)
TINY = core_bench.Sizes(
    append_lengths=(10, 40),
    thread_length=20,
    update_count=60,
    mix_count=80,
    batch_sizes=(1, 7, 1_000),
    min_run_s=0.0,
    fold_deltas=100,
    fold_lengths=(10, 50),
    fold_reps=3,
    convert_items=40,
    codec_round_trips=5,
    repeats=ONCE,
    micro_repeats=ONCE,
)


@pytest.fixture(scope="module")
def results() -> core_bench.Results:
    return core_bench.measure(TINY, lambda message: None)


def test_every_timed_result_equals_langgraphs(results: core_bench.Results) -> None:
    assert results.failed_checks == []
    assert len(results.reducers) == len(core_bench.workloads(TINY)) * 2 * len(TINY.batch_sizes)
    assert all(row.check.ok for row in results.reducers)


def test_every_target_is_judged(results: core_bench.Results) -> None:
    assert len(results.targets) == 5
    assert "| apply_deltas vs langgraph" in core_bench.render(results)


def test_the_mix_removes_only_ids_that_exist_then() -> None:
    workload = mix(20, 200, seed=3)
    live = {m["id"] for m in workload.initial}
    kinds = {"append": 0, "update": 0, "remove": 0}
    for delta in workload.deltas:
        if delta["type" if "type" in delta else "role"] == "remove":
            assert delta["id"] in live
            live.remove(delta["id"])
            kinds["remove"] += 1
        elif delta["id"] in live:
            kinds["update"] += 1
        else:
            live.add(delta["id"])
            kinds["append"] += 1
    assert kinds["append"] > kinds["update"] > kinds["remove"] > 0


def test_workloads_are_deterministic() -> None:
    def same(a: Workload, b: Workload) -> bool:
        return a.initial == b.initial and a.deltas == b.deltas

    assert same(updates(10, 30, seed=1), updates(10, 30, seed=1))
    assert same(appends(10, seed=1), appends(10, seed=1))
    assert not same(appends(10, seed=1), appends(10, seed=2))


def test_a_wrong_state_is_reported_as_a_mismatch() -> None:
    ours = [core.HumanMessage(content="a", id="1"), core.HumanMessage(content="b", id="2")]
    wrong = [core.HumanMessage(content="a", id="1"), core.HumanMessage(content="c", id="2")]
    assert first_difference(core.dump_messages(ours), core.dump_messages(wrong)) == (
        "message 1 differs in ['content']"
    )
    assert first_difference(core.dump_messages(ours), core.dump_messages(ours[:1])) == (
        "lengths differ: 2 vs 1"
    )
    theirs = [HumanMessage(content="a", id="1"), HumanMessage(content="b", id="2")]
    assert same_state("equal", ours, theirs).ok
    assert not same_state("unequal", wrong, theirs).ok


def test_the_command_line_writes_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(core_bench, "QUICK", TINY)
    out = tmp_path / "core.json"
    assert core_bench.main(["--quick", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["meta"]["mode"] == "quick"
    assert data["failed_checks"] == []
    assert len(data["targets"]) == 5
    assert len(data["reducers"]) == len(core_bench.workloads(TINY)) * 2 * len(TINY.batch_sizes)
    assert "## Targets" in capsys.readouterr().out


def test_a_wrong_fold_is_reported_as_a_mismatch() -> None:
    prepared = Prepared.of(appends(12, seed=4), "append")
    calls = batches(prepared.deltas, 3)
    for mode in (WORKER, TRACKED):
        fold = prepared.seed.fold(mode)
        for batch in calls[:-1]:  # the last batch left out: a wrong final state
            fold.apply(batch)
        assert not prepared.check(mode, calls, fold).ok
        for batch in calls[-1:]:
            fold.apply(batch)
        assert prepared.check(mode, calls, fold).ok

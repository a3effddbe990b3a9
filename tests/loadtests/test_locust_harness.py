"""The Locust harness against a private stack: a short run passes and reports, and the
correctness check catches states that differ from what was sent."""

from __future__ import annotations

import argparse
import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.workers.harness import make_settings, start_api, start_worker
from threadfold.loadtests.check import Api, check_threads
from threadfold.loadtests.config import (
    LoadConfig,
    Stage,
    options,
    parse_stages,
    stage_at,
    step_stages,
)
from threadfold.loadtests.run import run_loadtest
from threadfold.testing import Ledger

# Every user class present (3 writers, 2 readers, 1 batch job at 6 users), small batches,
# and enough probes that the VISIBLE entry has rows even in a short run.
SMALL = {
    "LOADTEST_THREADS": "30",
    "LOADTEST_WRITER_WEIGHT": "3",
    "LOADTEST_READER_WEIGHT": "2",
    "LOADTEST_BULK_WEIGHT": "1",
    "LOADTEST_BULK_SIZE": "10",
    "LOADTEST_MESSAGE_CHARS": "120",
    "LOADTEST_VISIBLE_SAMPLE": "0.5",
    "LOADTEST_STEPS": "2",
}


@pytest.fixture
def api_url(redis_url: str, tmp_path: Path) -> Iterator[str]:
    """A real API process and two Celery workers on a private redis-server."""
    settings = make_settings(redis_url)
    api, url = start_api(settings, tmp_path)
    workers = [start_worker(settings, f"lt{i}", tmp_path) for i in range(2)]
    try:
        yield url
    finally:
        api.kill()
        for worker in workers:
            worker.kill()


def _stats(out: Path) -> dict[tuple[str, str], dict[str, str]]:
    with (out / "stats_stats.csv").open() as f:
        return {(row["Type"], row["Name"]): row for row in csv.DictReader(f)}


def _tail(path: Path, lines: int = 60) -> str:
    return "\n".join(path.read_text().splitlines()[-lines:]) if path.exists() else ""


def test_a_short_run_passes_writes_reports_and_checks_every_thread(
    api_url: str, tmp_path: Path
) -> None:
    out, log = tmp_path / "out", tmp_path / "locust.log"
    code = run_loadtest(api_url, 6, 3, 18, out, extra_env=SMALL, log_path=log)
    assert code == 0, _tail(log)
    assert (out / "report.html").stat().st_size > 0
    stats = _stats(out)
    for entry in [
        ("POST", "POST /threads/[id]/deltas"),
        ("POST", "POST /threads/[id]/deltas (chunk)"),
        ("POST", "POST /deltas"),
        ("GET", "GET /threads/[id]/state (read-your-writes)"),
        ("GET", "GET /threads/[id]/state (visibility probe)"),
        ("VISIBLE", "enqueue->visible"),
    ]:
        assert entry in stats, (entry, sorted(stats))
        assert int(stats[entry]["Request Count"]) > 0, entry
        assert int(stats[entry]["Failure Count"]) == 0, entry
    summary: dict[str, Any] = json.loads((out / "check.json").read_text())
    assert summary["ok"] and summary["difference_count"] == 0, summary
    assert summary["threads_checked"] >= 10, summary
    assert (
        summary["threads_checked"] + summary["threads_unverifiable"] == summary["threads_written"]
    )
    assert "correctness check:" in log.read_text()


def test_a_run_whose_fold_disagrees_with_the_deployment_fails(api_url: str, tmp_path: Path) -> None:
    """Folding chunks by merging while the deployment replaces them: the check must object
    and the run must exit non-zero (the whole failure path, not only the function)."""
    out, log = tmp_path / "out", tmp_path / "locust.log"
    env = {
        **SMALL,
        "LOADTEST_MERGE_CHUNKS": "true",
        "LOADTEST_STREAM_FINAL": "0",  # every burst leaves its chunks: merged != replaced
        "LOADTEST_READER_WEIGHT": "0",
        "LOADTEST_STEPS": "1",
    }
    code = run_loadtest(api_url, 4, 4, 8, out, extra_env=env, log_path=log)
    assert code != 0, _tail(log)
    summary = json.loads((out / "check.json").read_text())
    assert not summary["ok"] and summary["difference_count"] > 0, summary
    assert {d["kind"] for d in summary["differences"]} == {"state differs"}


def _write(api: Api, ledger: Ledger, thread: str, messages: list[Any], delta_id: str) -> None:
    out = ledger.begin(thread, messages, delta_id)
    status, body = api.post_delta(thread, messages, delta_id)
    assert status == 202, body
    ledger.accept(out, body["version"], body["ids"])


def test_the_check_catches_states_altered_behind_its_back(api_url: str) -> None:
    api, ledger = Api(api_url), Ledger()
    for n, thread in enumerate(["kept", "extra", "deleted"]):
        _write(api, ledger, thread, [{"role": "user", "content": "hi"}], f"d{n}")
        _write(api, ledger, thread, [{"role": "assistant", "content": "hello"}], f"e{n}")
    assert api.post_delta("extra", [{"role": "user", "content": "unrecorded"}], None)[0] == 202
    assert api.request("DELETE", "/threads/deleted")[0] == 204

    report = check_threads(api, ledger, wait=20)

    assert report.threads_checked == 3 and not report.ok
    assert {d.thread_id: d.kind for d in report.differences} == {
        "extra": "state differs",
        "deleted": "missing",
    }
    [extra] = [d for d in report.differences if d.thread_id == "extra"]
    assert "expected 2 messages, got 3" in extra.detail


def test_unanswered_writes_are_resent_with_their_delta_id_or_left_unchecked(
    api_url: str,
) -> None:
    api, ledger = Api(api_url), Ledger()
    # Stored, but the answer "was lost": the ledger has it pending.
    lost = ledger.begin("lost-answer", [{"role": "user", "content": "a"}], "lost-1")
    assert api.post_delta("lost-answer", lost.messages, "lost-1")[0] == 202
    # Never sent at all: re-sending stores it now.
    ledger.begin("never-sent", [{"role": "user", "content": "b"}], "never-1")
    # No delta_id: whether it was stored cannot be known.
    _write(api, ledger, "no-id", [{"role": "user", "content": "c"}], "first")
    ledger.begin("no-id", [{"role": "user", "content": "d"}], None)

    report = check_threads(api, ledger, wait=20)

    assert report.ok, report.differences
    assert (report.resent, report.threads_checked, report.threads_unverifiable) == (2, 2, 1)


def test_the_ledger_folds_in_version_order_whatever_the_answer_order() -> None:
    ledger = Ledger()
    first = ledger.begin("t", [{"role": "user", "content": "v1", "id": "m"}], None)
    second = ledger.begin("t", [{"role": "user", "content": "v2", "id": "m"}], None)
    ledger.accept(second, "1000-1", ["m"])  # answered first, stored second
    ledger.accept(first, "1000-0", ["m"])
    [message] = ledger.expected("t")
    assert message.content == "v2"
    assert ledger.last_version("t") == "1000-1"


def test_stages_and_steps() -> None:
    stages = parse_stages("10:5:1, 20:10:2")
    assert stages == [Stage(10, 5, 1), Stage(20, 10, 2)]
    assert stage_at(stages, 5) == (5, 1)
    assert stage_at(stages, 25) == (10, 2)
    assert stage_at(stages, 31) is None
    assert stage_at(stages, 25, run_time=20) is None
    assert [s.users for s in step_stages(10, 2, 60, 4)] == [3, 5, 8, 10]
    assert step_stages(10, 2, None, 1)[0].seconds == float("inf")
    with pytest.raises(ValueError, match="seconds:users:rate"):
        parse_stages("10:5")


def test_every_knob_is_an_option_and_a_loadtest_variable() -> None:
    table = {flag: (env, kind, default) for flag, env, kind, default, _ in options()}
    assert table["--message-chars"] == ("LOADTEST_MESSAGE_CHARS", int, 200)
    merge_env, merge_type, merge_default = table["--merge-chunks"]
    assert merge_env == "LOADTEST_MERGE_CHUNKS" and merge_default is False
    assert (merge_type("false"), merge_type("true")) == (False, True)
    parsed = argparse.Namespace(threads=7, merge_chunks=None)
    assert LoadConfig.from_options(parsed) == LoadConfig(threads=7)

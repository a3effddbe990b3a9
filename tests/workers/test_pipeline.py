"""The distributed guarantees, with a real redis-server and real Celery worker processes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from langgraph.graph.message import _messages_delta_reducer

from tests.differential.lc import lc_from_ours
from tests.workers.harness import (
    ROOT,
    load_jsonl,
    make_settings,
    start_worker,
    state_dump,
    store_for,
    wait_drained,
)
from threadfold.core import dump_messages
from threadfold.testing import Ledger, stamped
from threadfold.workers.ops.processes import settings_env
from threadfold.workers.settings import Settings
from threadfold.workers.storage.layout import layout_problems

PRODUCERS = 3
THREADS = 200
DELTAS_PER_PRODUCER = 700


def _run_producers(
    settings: Settings, tmp: Path, seeds: list[int], threads: int, deltas: int
) -> Ledger:
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.workers.produce",
                str(seed),
                str(threads),
                str(deltas),
                str(tmp / f"produced-{seed}.jsonl"),
            ],
            env={**settings_env(settings), "PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
            cwd=ROOT,
        )
        for seed in seeds
    ]
    for proc in procs:
        assert proc.wait(timeout=300) == 0
    sent = Ledger()
    for seed in seeds:
        load_jsonl(sent, tmp / f"produced-{seed}.jsonl")
    return sent


def _assert_states(settings: Settings, sent: Ledger) -> None:
    store = store_for(settings)
    wait_drained(store, sent.threads(), timeout=120)
    wrong = [
        ref for ref in sent.threads() if state_dump(store, ref) != dump_messages(sent.expected(ref))
    ]
    assert not wrong, f"{len(wrong)} threads differ from the fold, e.g. {wrong[:3]}"
    for ref in sent.threads():
        k = settings.keyspace.thread(ref)
        assert store.client.xlen(k.log) == 0, f"{ref}: applied entries left in the log"
        assert layout_problems(store, ref) == [], ref
        assert store.client.zscore(k.dirty, ref) is None
        status = store.status(ref)
        assert status is not None
        assert status.version == sent.last_version(ref)
    store.client.close()


def _langgraph_fold(sent: Ledger, ref: str) -> list[dict[str, Any]]:
    """The same deltas through the real LangGraph delta reducer, one delta per call."""
    state: list[Any] = []
    for _, messages, ids in sent.deltas(ref):
        theirs = [lc_from_ours(m) for m in dump_messages(stamped(messages, ids))]
        state = _messages_delta_reducer(state, [theirs])
    return [m.model_dump() for m in state]


def test_random_deltas_from_several_producers_fold_to_the_one_at_a_time_state(
    redis_url: str, tmp_path: Path
) -> None:
    settings = make_settings(redis_url)
    workers = [start_worker(settings, f"w{i}", tmp_path) for i in range(4)]
    try:
        sent = _run_producers(settings, tmp_path, [1, 2, 3], THREADS, DELTAS_PER_PRODUCER)
        assert len(sent.threads()) > THREADS * 0.9
        _assert_states(settings, sent)
        store = store_for(settings)
        for ref in sorted(sent.threads())[:50]:
            assert state_dump(store, ref) == _langgraph_fold(sent, ref), ref
        store.client.close()
    finally:
        for w in workers:
            w.kill()

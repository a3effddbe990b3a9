"""The HTTP benchmark's correctness path on tiny sizes: real Redis, API and Celery workers.

No timing is asserted. What is checked: the state threads are filled and drained in
order, every write run (paced, and wrk's when wrk is installed) is drained and its
deltas verified, and the report and the JSON are written. Without wrk only the parts
that do not need it run (prefill, the paced generator, drain checks, formatting), and
the benchmark itself refuses to start, saying how to install wrk.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.http import main as http_bench
from bench.http import paced, profile, report, wrk

HAVE_WRK = wrk.wrk_path() is not None

TINY = http_bench.Sizes(
    rounds=1,
    seconds=1,
    bulk_seconds=1,
    variants=("api1",),
    post_ids=50,
    hot_ids=5,
    state_threads=3,
    state_messages=10,
    bulk_threads=40,
    bulk_per_request=10,
    bulk_bodies=4,
    connections=4,
    bulk_connections=2,
    paced_seconds=0.5,
    paced_half_max=False,
    paced_rate=40.0,
    paced_rate_r2=None,
    paced_connections=4,
    paced_grace=10.0,
    warmup_seconds=1,
    profile_seconds=0,
    celery_workers=1,
    api_workers=(1,),
    use_wrk=HAVE_WRK,
)


@pytest.fixture(scope="module")
def results() -> http_bench.Results:
    return http_bench.measure(TINY, lambda message: None)


def test_the_state_threads_are_filled_drained_and_in_order(results: http_bench.Results) -> None:
    assert results.prefill.ok, results.prefill.detail
    assert "3 threads x 10 messages" in results.prefill.name


def test_every_paced_delta_is_answered_applied_and_stored(results: http_bench.Results) -> None:
    [run] = results.paced
    assert run.check.ok, run.check.detail
    assert run.result.scheduled == 20
    assert run.result.completed == run.accepted == 20
    assert run.drain.threads >= 0 and run.drain.seconds >= 0
    assert run.result.latency("p99") is not None


def test_every_wrk_run_is_drained_and_verified(results: http_bench.Results) -> None:
    assert results.failed_checks == []
    if not HAVE_WRK:
        assert results.runs == []
        return
    names = [r.scenario.name for r in results.runs]
    assert names == ["healthz", "post-10k", "post-100", "state", "bulk"]
    for run in results.runs:
        assert run.check.ok, run.check.detail
        assert run.wrk.requests > 0 and run.wrk.non_2xx == 0
        assert (run.drain is not None) == run.scenario.writes
    bulk = results.runs[-1]
    assert bulk.accepted == bulk.wrk.requests * TINY.bulk_per_request


def test_the_report_and_the_json_are_written(
    results: http_bench.Results,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(http_bench, "measure", lambda sizes, progress, keep=False: results)
    out = tmp_path / "http.json"
    assert http_bench.main(["--quick", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["meta"]["mode"] == "quick"
    assert data["failed_checks"] == []
    assert len(data["targets"]) == 4
    assert len(data["paced"]) == 1 and data["paced"][0]["completed"] == 20
    text = capsys.readouterr().out
    assert "## Targets" in text and "## Fixed-rate POST latency" in text
    if HAVE_WRK:
        assert "## Max throughput" in text
        assert {s["scenario"] for s in data["summaries"]} >= {"healthz", "bulk"}


def test_without_wrk_the_benchmark_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(wrk.WrkMissingError, match="apt-get install wrk"):
        wrk.require_wrk()
    assert http_bench.main(["--quick", "--out", str(tmp_path / "x.json")]) == 2
    assert "apt-get install wrk" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()


def test_wrk_result_lines_are_parsed() -> None:
    line = (
        'WRKJSON {"requests":1000,"duration_us":2000000,"bytes":50000,"connect":0,'
        '"read":0,"write":0,"status":3,"timeout":1,"p50":1500,"p90":2500,"p99":9000,'
        '"p999":12000,"max":15000,"mean":1800.5}'
    )
    result = wrk.parse_output(f"noise\n{line}\n", cpu_s=0.5, connections=8, threads=1)
    assert result.rps == 500.0
    assert result.p99_ms == 9.0 and result.max_ms == 15.0
    assert result.non_2xx == 3 and not result.ok
    assert result.cpu_share == 0.25
    with pytest.raises(RuntimeError, match="no result line"):
        wrk.parse_output("Running 1s test\n", cpu_s=0.0, connections=1, threads=1)


def test_every_wrk_script_ends_in_the_same_result_line() -> None:
    for name, text in wrk.SCRIPTS.items():
        assert "WRKJSON" in text and "function done(" in text, name
    assert wrk.MESSAGE in wrk.POST_ONE and wrk.MESSAGE in wrk.POST_BULK


def test_paced_requests_and_percentiles() -> None:
    build = paced.post_request(8000, "p-", 10)
    request = build(13)
    assert request.startswith(b"POST /threads/p-3/deltas HTTP/1.1\r\n")
    head, _, body = request.partition(b"\r\n\r\n")
    assert f"Content-Length: {len(body)}".encode() in head
    assert json.loads(body) == {"messages": [json.loads(wrk.MESSAGE)]}
    got = paced._percentiles([0.001 * i for i in range(1, 101)])
    assert got["p50"] == 50.0 and got["p99"] == 99.0 and got["max"] == 100.0
    assert paced._percentiles([0.001, float("inf")])["max"] is None


def test_profile_samples_go_to_the_first_named_frame_from_the_leaf() -> None:
    root = (
        "thread (1): MainThread;<module> (api/__main__.py:9);serve (api/server.py:46);"
        "Runner.run (asyncio/runners.py:118)"
    )
    raw = "\n".join(
        [
            f"{root};post_delta (api/app.py:135);prepare (workers/ingest/producer.py:85);"
            "encode_messages (core/codec.py:50);mpack_encode (msgspec/_core.cpython-311.so) 3",
            f"{root};arun_many (workers/redisio/client.py:167);"
            "StreamWriter.writelines (asyncio/streams.py:346);write (libc.so.6) 2",
            f"{root};TaskObj_dealloc (_asynciomodule.c:1) 1",
            "thread (2): uvloop_0;_worker (concurrent/futures/thread.py:81);"
            "CeleryWaker.wake (workers/runtime/app.py:85);"
            "Producer.publish (kombu/messaging.py:190) 4",
        ]
    )
    prof = profile.parse(raw, "test", native=True, rate=100, seconds=1.0)
    groups = dict(prof.groups)
    assert prof.samples == 10
    assert groups["msgspec (JSON decode/encode, msgpack)"] == 3
    assert groups["producer + store glue (threadfold.workers.ingest.producer/storage/redisio)"] == 2
    assert groups[profile.EVENT_LOOP] == 1
    assert groups["Celery/kombu wake-up publish"] == 4
    assert "API handlers + service (api.*)" not in groups  # process start frames only
    assert prof.busy(4) == 0.04
    lines = report.profile_tables([prof])
    assert any("write (libc.so.6) in StreamWriter.writelines" in line for line in lines)

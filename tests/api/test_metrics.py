"""``/metrics`` rendering: what prometheus_client makes of a snapshot of the totals,
read back with prometheus_client's own parser."""

from __future__ import annotations

import math
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from threadfold.api import metrics as prom
from threadfold.workers.metrics import LAG_BUCKETS_MS, LATENCY_BUCKETS_MS

OPERATIONS = Path(__file__).resolve().parents[2] / "docs" / "operations.md"
Sample = tuple[str, tuple[tuple[str, str], ...]]


def parsed(body: str) -> tuple[dict[str, str], dict[Sample, float]]:
    """Family name -> type, and every sample's value by (name, sorted labels)."""
    types: dict[str, str] = {}
    samples: dict[Sample, float] = {}
    for family in text_string_to_metric_families(body):
        types[family.name] = family.type
        for s in family.samples:
            samples[s.name, tuple(sorted(s.labels.items()))] = s.value
    return types, samples


@given(st.lists(st.integers(0, 1000), min_size=len(LAG_BUCKETS_MS) + 1, max_size=14))
def test_histogram_buckets_are_cumulative_and_the_count_is_the_last(counts: list[int]) -> None:
    bounds = [*map(str, LAG_BUCKETS_MS), "+Inf"]
    totals = {f"visible_lag_ms_bucket:{b}": float(c) for b, c in zip(bounds, counts, strict=True)}
    totals["visible_lag_ms_sum"] = 12.5
    types, samples = parsed(prom.render(totals, {}))
    assert types["threadfold_visible_lag_ms"] == "histogram"
    shown = [samples["threadfold_visible_lag_ms_bucket", (("le", b),)] for b in bounds]
    assert shown == [float(sum(counts[: i + 1])) for i in range(len(counts))]
    assert samples["threadfold_visible_lag_ms_count", ()] == sum(counts)
    assert samples["threadfold_visible_lag_ms_sum", ()] == 12.5


def test_counters_and_labels_keep_their_names_and_values_are_escaped() -> None:
    totals = {
        "commits": 3.0,
        "http_requests|route=post_delta|status=202": 4.0,
        "http_request_ms_bucket:5|route=get_state": 2.0,
        "http_request_ms_bucket:+Inf|route=get_state": 1.0,
        "http_request_ms_sum|route=get_state": 30.0,
        'odd|why=a "quoted" \\ back\nslash': 1.0,
    }
    body = prom.render(totals, {"threads_with_backlog": 2.0, "processes|role=worker": 3.0})
    types, samples = parsed(body)
    assert types["threadfold_commits"] == "counter"
    assert types["threadfold_threads_with_backlog"] == "gauge"
    assert samples["threadfold_commits_total", ()] == 3
    key = ("threadfold_http_requests_total", (("route", "post_delta"), ("status", "202")))
    assert samples[key] == 4
    assert samples["threadfold_http_request_ms_bucket", (("le", "5"), ("route", "get_state"))] == 2
    assert samples["threadfold_http_request_ms_count", (("route", "get_state"),)] == 3
    assert samples["threadfold_odd_total", (("why", 'a "quoted" \\ back\nslash'),)] == 1
    assert samples["threadfold_threads_with_backlog", ()] == 2
    assert samples["threadfold_processes", (("role", "worker"),)] == 3
    # Every bound of the latency histogram is shown, counts or not.
    buckets = [k for k in samples if k[0] == "threadfold_http_request_ms_bucket"]
    assert len(buckets) == len(LATENCY_BUCKETS_MS) + 1


def test_fields_prometheus_cannot_name_are_left_out_not_a_failed_scrape() -> None:
    totals = {
        "commits": 1.0,
        "not a name": 1.0,
        "x|bad label=1": 1.0,
        "y|le=1": 1.0,  # a counter may not take the histogram's label
        "nan_valued": math.nan,
        "unknown_hist_bucket:5": 1.0,
    }
    _, samples = parsed(prom.render(totals, {}))
    assert set(samples) == {("threadfold_commits_total", ())}


def test_a_bucket_bound_no_longer_listed_counts_in_the_next_one_up() -> None:
    # 3 is not a bound of the lag histogram (a deploy changed them): it belongs to le=5.
    totals = {"visible_lag_ms_bucket:3": 2.0, "visible_lag_ms_bucket:5": 1.0}
    _, samples = parsed(prom.render(totals, {}))
    assert samples["threadfold_visible_lag_ms_bucket", (("le", "2"),)] == 0
    assert samples["threadfold_visible_lag_ms_bucket", (("le", "5"),)] == 3
    assert samples["threadfold_visible_lag_ms_count", ()] == 3


def test_the_operations_guide_names_every_metric() -> None:
    text = OPERATIONS.read_text()
    for name, (kind, _) in prom.HELP.items():
        shown = f"threadfold_{name}_total" if kind == "counter" else f"threadfold_{name}"
        assert f"`{shown}" in text, shown

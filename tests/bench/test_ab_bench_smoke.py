"""The redesign A/B's correctness path on tiny sizes: HEAD in a temporary worktree
against this checkout, one round, real Redis, API and Celery workers on each side.

No timing is asserted (both sides may even be the same code). What is checked: each
side's driver and every service process ran its own tree's threadfold (the worktree's
for the base, this checkout's for the head); both sides were driven by the same bench/;
every POST was applied and stored, every answer 2xx, every end-to-end state equals the
one-delta-at-a-time fold; the JSON has both sides' medians, per-round ratios and their
medians, all positive where judged; the worktree is gone afterwards.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from bench.ab import figures, load
from bench.ab import main as ab
from bench.ab.sizes import QUICK
from bench.http import paced
from bench.live import trees


def test_the_load_generator_builds_its_requests_and_reads_content_length() -> None:
    assert load.get_request(8000, "t-", 3)(4) == (
        b"GET /threads/t-1/state HTTP/1.1\r\nHost: 127.0.0.1:8000\r\n\r\n")
    head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nContent-Length: 42"
    assert paced.content_length(head) == 42
    assert paced.content_length(b"HTTP/1.1 204 No Content\r\nserver: x") == 0


def test_head_against_head_quick_runs_each_tree_and_writes_both_sides(tmp_path: Path) -> None:
    head = trees.resolve("HEAD")
    out = tmp_path / "ab.json"
    status = ab.main(["--base", head, "--quick", "--rounds", "1", "--out", str(out),
                      "--logs", str(tmp_path / "logs")])
    data = json.loads(out.read_text())
    assert data["problems"] == [] and status == 0
    # Its own worktrees only: the handlers A/B's test may hold one at the same time.
    assert re.search(r"threadfold-ab-(?!handlers-)", trees.git("worktree", "list")) is None

    assert (data["base"]["kind"], data["head"]["kind"]) == ("worktree", "checkout")
    assert data["base"]["commit"] == data["head"]["commit"] == head
    assert data["base"]["bench_sha256"] == data["head"]["bench_sha256"]
    for name in ("base", "head"):
        side = data[name]
        driver = side["proof"]["driver"]
        assert driver["threadfold"] == "<tree>/threadfold/__init__.py"
        assert driver["cwd"] == "<tree>" and driver["same_python"]
        assert all(f.startswith("<tree>/") for f in driver["module_files"])
        services = side["proof"]["services"]
        assert set(services) == {"api", "http_worker", "beat", "e2e_worker"}
        for found in services.values():
            for one in found:
                assert one["module_file"].startswith("<tree>/threadfold/"), one
                assert one["cwd"] == one["pythonpath"] == "<tree>" and one["same_python"]
        [turn] = side["turns"]
        assert turn["http"]["post"]["check"]["ok"] and turn["http"]["get"]["check"]["ok"]
        assert turn["e2e"]["check"]["ok"]
        assert turn["http"]["post"]["accepted_deltas"] == QUICK.post_requests
        assert turn["http"]["get"]["requests"] == QUICK.get_requests
        assert all(v >= 0 for v in side["medians"].values())

    assert data["order"] == ["base head"]
    for key, verdict in data["judged"].items():
        assert data["base"]["medians"][key] > 0 and data["head"]["medians"][key] > 0
        [ratio] = data["ratios"][key]
        assert ratio > 0 and verdict["median_ratio"] == ratio
    assert set(data["judged"]) == {"http_post_api_us", "http_get_api_us",
                                   "e2e_cpu_per_delta_us"}
    assert "| figure | base, median | head, median |" in figures.markdown(data)


def test_the_handlers_ab_runs_each_tree_through_its_asgi_app(tmp_path: Path) -> None:
    """bench.ab.handlers' timing rounds on tiny sizes: each side's process imported its
    own tree's threadfold (the worktree's for the base), every request was answered as
    it should be (202 / 200: a refusal, a cheaper path, fails the run), the figures are
    positive and the worktree is gone afterwards. (Its --instructions mode runs the same
    side under callgrind: too slow for the suite; docs/benchmarks.md has its figures.)"""
    from bench.ab import handlers  # noqa: PLC0415  # only this test needs it

    out = tmp_path / "handlers.json"
    assert handlers.main(["--base", trees.resolve("HEAD"), "--rounds", "1",
                          "--requests", "50", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["proof"] == {"base": ["threadfold/__init__.py"],
                             "head": ["threadfold/__init__.py"]}
    for figure in ("post_us", "get_us"):
        assert data["figures"][figure]["base_median"] > 0
        assert data["figures"][figure]["head_median"] > 0
        assert len(data["figures"][figure]["ratios"]) == 1
    # Its own worktree only: the stack A/B's test may hold one at the same time.
    assert "threadfold-ab-handlers-" not in trees.git("worktree", "list")


def test_a_client_side_makes_its_calls_through_each_kind_of_client() -> None:
    """``bench.ab.clients``' side, as each tree runs it under callgrind: the calls go
    through the public client, against a private Redis (and an API process), and say
    which threadfold made them."""
    from bench.ab import clients  # noqa: PLC0415

    for kind in clients.KINDS:
        found = clients._side(kind, appends=3, states=2)
        assert found["threadfold"] == "threadfold/__init__.py"

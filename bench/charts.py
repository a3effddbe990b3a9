"""Charts for the docs, drawn from the committed benchmark results.

    python -m bench.charts [--results bench/results] [--out docs/img]

Reads ``core.json`` and ``pipeline.json`` (written by ``bench.core`` and
``bench.pipeline``) and writes three PNGs: reducer throughput against thread
length (threadfold vs LangGraph), per-delta cost against thread length (the fold and
the Redis commit), and end-to-end throughput against the naive baseline.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt

NAMES = {"apply_deltas": "threadfold apply_deltas", "langgraph_delta": "langgraph delta reducer",
         "langgraph_add_messages": "langgraph add_messages"}


def reducer_throughput(core: dict[str, Any], out: Path) -> Path:
    rows = [r for r in core["reducers"]
            if r["workload"].startswith("append") and r["variant"] == "objects" and r["batch"] == 1]
    rows.sort(key=lambda r: r["final_length"])
    fig, ax = plt.subplots(figsize=(6.4, 4))
    for key, label in NAMES.items():
        ax.plot([r["final_length"] for r in rows], [r["deltas_per_s"][key] for r in rows],
                marker="o", label=label)
    ax.set(xscale="log", yscale="log", xlabel="thread length (messages)",
           ylabel="deltas/s (one delta per call)",
           title="Folding one delta per call into a growing thread")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    return _save(fig, out / "reducer_throughput.png")


def cost_by_length(core: dict[str, Any], pipeline: dict[str, Any], out: Path) -> Path:
    fig, ax = plt.subplots(figsize=(6.4, 4))
    fold = [r for r in core["fold_append_cost_by_length"] if r["kind"].startswith("ThreadFold")]
    if fold:
        fold.sort(key=lambda r: r["length"])
        ax.plot([r["length"] for r in fold], [r["best_ns"] / 1000 for r in fold], marker="o",
                label="ThreadFold step (µs/delta)")
    names = {"updates": "updates of any message", "updates, last 100": "updates of the last 100"}
    for workload in ("updates", "updates, last 100", "appends"):
        rows = [r for r in pipeline["commit_cost"] if r["workload"] == workload
                and r["batch_size"] == 1000]
        rows.sort(key=lambda r: r["length"])
        if rows:
            cost = [min(r["drainer_cpu_us"]) + min(r["redis_cpu_us"]) for r in rows]
            ax.plot([r["length"] for r in rows], cost, marker="s",
                    label=f"drain + commit, {names.get(workload, workload)} (CPU µs/delta)")
    ax.set(xscale="log", xlabel="thread length (messages)", ylabel="µs per delta",
           title="Per-delta cost by thread length (100 to 100,000 messages)")
    ax.set_ylim(bottom=0)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, out / "cost_by_length.png")


def pipeline_vs_naive(pipeline: dict[str, Any], out: Path) -> Path:
    best = max(pipeline["e2e"], key=lambda r: r["deltas"] / r["seconds"])
    naive = pipeline["naive"]
    labels = ["threadfold\n(bulk producer, 2 workers)", "naive baseline\n(task per delta, lock,\n"
              "JSON blob, add_messages)"]
    values = [best["deltas"] / best["seconds"], naive["deltas"] / naive["seconds"]]
    fig, ax = plt.subplots(figsize=(6.4, 4))
    bars = ax.bar(labels, values, color=["#2b7bb9", "#b0b0b0"])
    ax.bar_label(bars, labels=[f"{v:,.0f}/s" for v in values])
    ax.set(yscale="log", ylabel="deltas/s, end to end",
           title=f"Same machine, same run: x{values[0] / values[1]:.0f}")
    return _save(fig, out / "pipeline_vs_naive.png")


def _save(fig: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=Path, default=Path("bench/results"))
    parser.add_argument("--out", type=Path, default=Path("docs/img"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    core = json.loads((args.results / "core.json").read_text())
    pipeline = json.loads((args.results / "pipeline.json").read_text())
    for path in (reducer_throughput(core, args.out), cost_by_length(core, pipeline, args.out),
                 pipeline_vs_naive(pipeline, args.out)):
        print(path)


if __name__ == "__main__":
    main()

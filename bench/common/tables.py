"""Markdown for the reports: every table, number and report is rendered here, so the
benchmarks' reports (and docs/benchmarks.md, pasted from them) look alike."""

from __future__ import annotations

from collections.abc import Sequence

from bench.common.target import Target


def table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A markdown table's lines."""
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def rate(value: float) -> str:
    """A per-second rate, short: ``1.23M``, ``456k``, ``789``."""
    if value >= 1e6:
        return f"{value / 1e6:.2f}M"
    if value >= 1e3:
        return f"{value / 1e3:.1f}k"
    return f"{value:.0f}"


def mark(ok: bool) -> str:
    return "pass" if ok else "FAIL"


def target_table(targets: Sequence[Target]) -> list[str]:
    head = ["target", "goal", "measured (worst)", "result", "detail"]
    return table(head, [[t.name, t.goal, t.value, mark(t.passed), t.detail] for t in targets])


def report(sections: Sequence[Sequence[str]]) -> str:
    """Sections (each a list of lines: heading, blank, body) as one markdown document."""
    return "\n\n".join("\n".join(s) for s in sections) + "\n"

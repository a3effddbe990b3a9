"""The lifecycle target: once every thread has expired and the sweep has removed it,
Redis holds no more than it held empty, within 5%."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

#: used_memory after the sweep, over the empty server's, at most this much more.
WITHIN: Final = 0.05


def judge(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    worst = max(runs, key=lambda r: r["residue_bytes"] / r["baseline"]["used_memory"])
    share = worst["residue_bytes"] / worst["baseline"]["used_memory"]
    return {
        "name": "used_memory after every thread expired and was swept",
        "goal": f"within {WITHIN:.0%} of the empty server's (the baseline)",
        "value": f"+{worst['residue_bytes']:,} B over {worst['baseline']['used_memory']:,} B "
                 f"(+{share:.2%}; {worst['threads']:,} threads, "
                 f"{'metadata' if worst['metadata'] else 'no metadata'})",
        "passed": abs(share) <= WITHIN,
    }

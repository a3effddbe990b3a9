"""The context target: a window of the long thread costs at most twice the short one's,
in the client's CPU and in Redis's (medians of the rounds' ratios, every read shape)."""

from __future__ import annotations

from typing import Any, Final

#: The long thread's read over the short one's, at most.
TIMES: Final = 2.0
#: The figures judged (the others are reported beside them).
JUDGED: Final = ("client_cpu_us", "redis_cpu_us")


def judge(summary: dict[str, Any]) -> dict[str, Any]:
    ratios = {(read, figure): per[figure]["ratio"]
              for read, per in summary.items() for figure in JUDGED}
    (read, figure), worst = max(ratios.items(), key=lambda kv: kv[1])
    return {"name": "long thread's read / short thread's read (client CPU, Redis CPU)",
            "goal": f"<= {TIMES:g}x", "value": round(worst, 3), "passed": worst <= TIMES,
            "detail": f"worst: {read}, {figure}"}

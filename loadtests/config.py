"""The load test's knobs, and the step-load plan the Locust shape follows.

Every knob is a Locust command-line option that also reads a ``LOADTEST_*`` variable
(see :func:`options`), so a run is configured the same way from a shell, ``run_loadtest``'s
``extra_env`` or the web UI. Nothing here imports Locust.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True)
class LoadConfig:
    """The parsed knobs of one Locust process (defaults here, help in ``HELP``)."""

    threads: int = 200
    message_chars: int = 200
    writer_weight: int = 6
    reader_weight: int = 3
    bulk_weight: int = 1
    bulk_size: int = 50
    chunks: int = 8
    stream_final: float = 0.7
    conversation_turns: int = 20
    delta_id_fraction: float = 0.5
    visible_sample: float = 0.2
    wait_seconds: float = 20.0
    think_scale: float = 1.0
    stages: str = ""
    steps: int = 1
    token: str = ""
    check_summary: str = ""
    check_concurrency: int = 8
    merge_chunks: bool = False

    @classmethod
    def from_options(cls, options: Any) -> LoadConfig:
        """From Locust's parsed options (an argparse namespace); absent ones keep defaults."""
        values = {f.name: getattr(options, f.name, None) for f in fields(cls)}
        return cls(**{name: value for name, value in values.items() if value is not None})


HELP = {
    "threads": "Shared threads per process (agent writers and batch jobs write there).",
    "message_chars": "Characters of a message's text.",
    "writer_weight": "Weight of multi-agent writers.",
    "reader_weight": "Weight of read-your-writes chat users.",
    "bulk_weight": "Weight of batch jobs posting /deltas.",
    "bulk_size": "Deltas per POST /deltas.",
    "chunks": "Streamed chunks per burst.",
    "stream_final": "Share of chunk bursts ended by the complete message under the same id.",
    "conversation_turns": "Turns before a chat user starts a new conversation.",
    "delta_id_fraction": "Share of writes sent with a delta_id (the rest get uuid ids).",
    "visible_sample": "Share of writes followed by an enqueue->visible probe.",
    "wait_seconds": "The min_version wait of reads, probes and the check.",
    "think_scale": "Multiplies every user's think time.",
    "stages": "Step load as 'seconds:users:rate,...' (instead of --steps).",
    "steps": "Ramp to -u users in this many equal steps over -t.",
    "token": "Bearer token, when the API requires keys.",
    "check_summary": "Write the check's JSON summary here ('{tag}': the process tag).",
    "check_concurrency": "Parallel reads of the check.",
    "merge_chunks": "The deployment's THREADFOLD_MERGE_CHUNKS (the check folds the same way).",
}


def options() -> list[tuple[str, str, Callable[[str], Any], Any, str]]:
    """(flag, environment variable, type, default, help) of every knob, for Locust's
    parser: ``--message-chars`` / ``LOADTEST_MESSAGE_CHARS`` for ``message_chars``."""
    return [
        (
            "--" + f.name.replace("_", "-"),
            "LOADTEST_" + f.name.upper(),
            flag_value if isinstance(f.default, bool) else type(f.default),
            f.default,
            HELP[f.name],
        )
        for f in fields(LoadConfig)
    ]


def flag_value(raw: object) -> bool:
    """A boolean from an option or environment value ('true', '1', 'yes', 'on')."""
    return str(raw).strip().lower() in {"1", "true", "yes", "on"}


@dataclass(frozen=True)
class Stage:
    """Hold ``users`` (reached at ``spawn_rate`` per second) for ``seconds``."""

    seconds: float
    users: int
    spawn_rate: float


def parse_stages(text: str) -> list[Stage]:
    """``"30:10:5,60:40:5"`` -> two stages; an empty text -> none."""
    stages = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        fields = part.split(":")
        if len(fields) != 3:
            raise ValueError(f"a stage is 'seconds:users:rate', got {part!r}")
        seconds, users, rate = float(fields[0]), int(fields[1]), float(fields[2])
        if seconds <= 0 or users < 0 or rate <= 0:
            raise ValueError(f"a stage needs seconds > 0, users >= 0, rate > 0; got {part!r}")
        stages.append(Stage(seconds, users, rate))
    return stages


def step_stages(users: int, spawn_rate: float, run_time: float | None, steps: int) -> list[Stage]:
    """``steps`` equal stages ramping to ``users``; one endless stage without a run time."""
    steps = max(1, steps)
    length = run_time / steps if run_time else math.inf
    return [
        Stage(length, max(1, math.ceil(users * i / steps)), spawn_rate) for i in range(1, steps + 1)
    ]


def stage_at(
    stages: Sequence[Stage], elapsed: float, run_time: float | None = None
) -> tuple[int, float] | None:
    """The (users, spawn rate) at ``elapsed`` seconds; None (stop) after the last stage or
    the run time, whichever comes first."""
    if run_time is not None and elapsed >= run_time:
        return None
    end = 0.0
    for stage in stages:
        end += stage.seconds
        if elapsed < end:
            return stage.users, stage.spawn_rate
    return None

"""Shared test helpers: golden cases, compact message forms, deterministic ids."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from threadfold.core import BaseMessage, dump_message

GOLDEN_FILE = Path(__file__).parent / "golden" / "langgraph_reducer_cases.json"


def golden_cases() -> list[dict[str, Any]]:
    """The 42 cases produced by langgraph 1.2.24 (a copy of the spec's file)."""
    cases: list[dict[str, Any]] = json.loads(GOLDEN_FILE.read_text())
    return cases


def compact(message: dict[str, Any]) -> dict[str, Any]:
    """The golden file's compact form of a flat message dict (spec §11.4)."""
    out = {"type": message["type"], "content": message["content"], "id": message["id"]}
    for key, value in message.items():
        if key in out or value is None or value in ({}, []):
            continue
        if key == "status" and value == "success":
            continue
        out[key] = value
    return out


def compact_all(messages: Iterable[BaseMessage]) -> list[dict[str, Any]]:
    return [compact(dump_message(m)) for m in messages]


def golden_ids() -> Callable[[], str]:
    """The placeholder ids the golden file uses for generated uuids, in order."""
    counter = itertools.count(1)
    return lambda: f"00000000-0000-4000-8000-{next(counter):012d}"

"""Reads through the API: time travel (``?at_version=``), a copy at a version (read
back as the time travel it must equal), and the live state."""

from __future__ import annotations

import random
import uuid
from typing import Any

import httpx

from tests.history.model import Kind, key
from tests.history.session import Session
from tests.history.writes import thread_id


def _answer(response: httpx.Response) -> dict[str, Any]:
    """The status, and the body's version and messages, or its error's fields."""
    answer: dict[str, Any] = {"status": response.status_code}
    try:
        body = response.json()
    except ValueError:
        answer["body"] = response.text[:500]
        return answer
    if response.status_code == 200:
        answer["version"] = body["version"]
        answer["messages"] = body["messages"]
        answer["total"] = body["total"]
    else:
        answer["error"] = body.get("error", body)
    return answer


def asked_version(rng: random.Random, session: Session, ref: str, now_ms: int) -> str:
    """A version to travel to: mostly the newest or another acknowledged version of the
    current incarnation; also a deleted incarnation's, one between entries, one in the
    future, a poison entry's, and one before every thread."""
    versions, old, poisons = session.known.snapshot(ref)
    roll = rng.random()
    if versions and roll < 0.45:
        return versions[-1]
    if versions and roll < 0.70:
        return rng.choice(versions)
    if old and roll < 0.78:
        return rng.choice(old)
    if versions and roll < 0.84:
        ms, seq = key(rng.choice(versions))
        return f"{ms}-{seq + 1}" if rng.random() < 0.5 else f"{ms - 1}-{2**32}"
    if poisons and roll < 0.90:
        return rng.choice(poisons)
    if roll < 0.95:
        return f"{now_ms + rng.randrange(1, 5000)}-0"
    return "1-0"


def travel(session: Session, rng: random.Random, ref: str, asked: str | None = None) -> None:
    asked = asked or asked_version(rng, session, ref, session.redis_ms())
    with session.history.op("travel", "http", [ref], at_version=asked) as op:
        response = session.http.get(
            f"/threads/{thread_id(ref)}/state", params={"at_version": asked}
        )
        op.answer = _answer(response)


def copy(session: Session, rng: random.Random, ref: str) -> None:
    """POST /threads/{id}/copy at a version, then the copy's state once its one delta is
    applied: answered as a time travel to that version, which the checker judges as
    one (the copy's state must be exactly the source's there)."""
    asked = asked_version(rng, session, ref, session.redis_ms())
    to = f"copy-{uuid.uuid4().hex[:12]}"
    with session.history.op("copy", "http", [ref], at_version=asked, to=to) as op:
        response = session.http.post(
            f"/threads/{thread_id(ref)}/copy", json={"to": to, "at_version": asked}
        )
        if response.status_code != 201:
            op.answer = _answer(response)
            return
        made = response.json()
        read = session.http.get(
            f"/threads/{to}/state", params={"min_version": made["version"], "wait": "10"}
        )
        op.answer = _answer(read)
        if read.status_code == 200:
            op.answer["version"] = made["from_version"]  # the source's, as travel answers
    session.http.delete(f"/threads/{to}")  # the copy is no thread of the model's


def live(session: Session, rng: random.Random, ref: str, kind: Kind = "live") -> None:
    """The live state; now and then with ``min_version`` (read-your-writes) of the
    newest version acknowledged so far, waiting up to a second."""
    params: dict[str, str] = {}
    versions, _, _ = session.known.snapshot(ref)
    if kind == "live" and versions and rng.random() < 0.15:
        params = {"min_version": versions[-1], "wait": "1"}
    with session.history.op(kind, "http", [ref], **params) as op:
        response = session.http.get(f"/threads/{thread_id(ref)}/state", params=params)
        op.answer = _answer(response)

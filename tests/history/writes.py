"""The operations that change a thread's log: writes, deletes, poison entries.

Each records what it sent and what it was answered. A write that gets no answer is sent
again with the same ``delta_id`` (answered with the first append's version); one that
never gets an answer leaves an entry the model cannot know, and the checker refuses
the whole history as inconclusive.
"""

from __future__ import annotations

import random
import time
import uuid
from typing import Any, Final

import httpx

from tests.history import deltas
from tests.history.model import Op
from tests.history.session import Session
from threadfold.core.codec import encode_messages
from threadfold.core.messages import HumanMessage
from threadfold.workers.ingest.producer import Delta

ATTEMPTS: Final = 5
TENANT: Final = "_"

#: Entries the drain cannot apply, appended by hand (no producer would write them).
POISONS: Final[dict[str, dict[str, bytes]]] = {
    "undecodable": {"d": b"\xc1 not msgpack"},
    "id-less": {"d": encode_messages([HumanMessage(content="no id")])},
    "no payload": {"x": b"1"},
}


def thread_id(ref: str) -> str:
    return ref.split("/", 1)[1]


def _planned(rng: random.Random, refs: list[str]) -> list[dict[str, Any]]:
    return [
        {"ref": ref, "messages": deltas.delta(rng, uuid.uuid4().hex[:6]),
         "delta_id": uuid.uuid4().hex}
        for ref in refs
    ]


def _post(session: Session, path: str, body: dict[str, Any]) -> httpx.Response:
    """POST, sent again (same body, same delta ids) when no answer or a 503 came."""
    for attempt in range(ATTEMPTS):
        try:
            response = session.http.post(path, json=body)
        except httpx.TransportError:
            if attempt == ATTEMPTS - 1:
                raise
        else:
            if response.status_code != 503 or attempt == ATTEMPTS - 1:
                return response
        time.sleep(0.05 * 2**attempt)  # a backoff before sending again, not a wait
    raise AssertionError("unreachable")


def _record(session: Session, op: Op, results: list[dict[str, Any]]) -> None:
    op.answer["results"] = results
    for sent, got in zip(op.call["deltas"], results, strict=True):
        session.known.wrote(sent["ref"], got["version"])


def write(session: Session, rng: random.Random, refs: list[str], via: str) -> None:
    """Append one delta per ref (``via`` http: one POST each, or one bulk POST when
    several; python: one ``enqueue_many``)."""
    planned = _planned(rng, refs)
    with session.locks.shared(refs), session.history.op(
        "write", via, refs, deltas=planned
    ) as op:
        if via == "python":
            done = session.producer.enqueue_many(
                [Delta(thread_id(p["ref"]), p["messages"], p["delta_id"]) for p in planned]
            )
            results = [{"version": d.version, "ids": list(d.ids), "duplicate": d.duplicate}
                       for d in done]
            op.answer["status"] = 202
        elif len(planned) == 1:
            p = planned[0]
            body = {"messages": p["messages"], "delta_id": p["delta_id"]}
            response = _post(session, f"/threads/{thread_id(p['ref'])}/deltas", body)
            op.answer["status"] = response.status_code
            results = [response.json()] if response.status_code == 202 else []
        else:
            items = [{"thread_id": thread_id(p["ref"]), "messages": p["messages"],
                      "delta_id": p["delta_id"]} for p in planned]
            response = _post(session, "/deltas", {"deltas": items})
            op.answer["status"] = response.status_code
            results = response.json()["results"] if response.status_code == 202 else []
        if op.answer["status"] != 202:
            op.answer["body"] = response.text[:500]
            return
        _record(session, op, results)


def delete(session: Session, ref: str, via: str) -> None:
    """Delete ``ref`` alone (no write of it in flight); then wait until Redis's clock has
    passed every version the thread had, so that the next incarnation's entries all
    follow the old ones (Redis forgets a deleted stream's last id: written again in the
    same millisecond, a new entry could precede old ones and name their versions)."""
    with session.locks.exclusive(ref):
        with session.history.op("delete", via, [ref]) as op:
            if via == "store":
                op.answer["status"] = 204 if session.store.delete(ref) else 404
            else:
                response = session.http.delete(f"/threads/{thread_id(ref)}")
                op.answer["status"] = response.status_code
        session.known.deleted(ref)
        newest = session.known.newest_ms(ref)
        while session.redis_ms() <= newest:
            time.sleep(0.001)  # a millisecond: the condition is Redis's clock itself


def poison(session: Session, rng: random.Random, ref: str) -> None:
    """Append by hand an entry the drain cannot apply, to a thread that exists (an
    entry alone would make a log without a thread)."""
    kind = rng.choice(sorted(POISONS))
    with session.locks.shared([ref]):
        if not session.known.exists(ref):
            return
        with session.history.op("poison", "redis", [ref], poison=kind) as op:
            log = session.store.keyspace.thread(ref).log
            fields: dict[Any, Any] = dict(POISONS[kind])  # redis-py's own key and value types
            entry = session.store.client.xadd(log, fields)
            op.answer["entry"] = entry.decode() if isinstance(entry, bytes) else str(entry)
        if "entry" in op.answer:
            session.known.wrote(ref, op.answer["entry"], poison=True)

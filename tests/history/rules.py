"""The rules: whether an answer is one the system could give during its operation.

Each rule returns ``None`` for an answer some instant of the operation's interval
justifies, or why none does. "Could" is judged from the history alone: an incarnation
is a candidate if it existed at some instant of the operation; an entry could be seen if
its write had started before the operation ended; it must have been seen if its write
had ended before the operation started (and, a poison entry, no skip of it had started
before the operation ended).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.history.epochs import Epoch, Thread
from tests.history.model import ZERO, Op, key

Why = str | None


@dataclass(frozen=True)
class Context:
    threads: dict[str, Thread]
    retention_ms: int


def _cursor(epoch: Epoch, version: str, op: Op) -> Why:
    """Whether ``version`` could be the thread's cursor during ``op``: 0-0 (nothing
    applied yet), a delta written by then, or a poison entry a skip had moved it onto."""
    if version == "0-0":
        return None
    entry = epoch.entry(version)
    if entry is None:
        return f"{version} is no entry of the incarnation born {epoch.first.version}"
    if entry.written.start >= op.end:
        return f"{version} was written after the read"
    if entry.poison and not entry.skipped_before(op.end):
        return f"{version} is a poison entry no skip had reached"
    return None


def _no_poison_upto(epoch: Epoch, version: str, op: Op) -> Why:
    """A state at ``version`` folds past every entry up to it: a poison entry there
    must have been skipped (the fold stops before one, and so does time travel)."""
    for entry in epoch.between(ZERO, key(version)):
        if entry.poison and not entry.skipped_before(op.end):
            return f"it passes poison entry {entry.version}, not skipped then"
    return None


def _complete(epoch: Epoch, version: str, asked: str, op: Op) -> Why:
    """No entry after ``version`` and up to ``asked`` was in the log for the whole read."""
    for entry in epoch.between(key(version), key(asked)):
        there = entry.written.end < op.start and not (
            entry.poison and entry.skipped_before(op.end)
        )
        if there:
            return f"it misses entry {entry.version}, acknowledged before the read began"
    return None


def _state(epoch: Epoch, op: Op, asked: str | None) -> Why:
    """A 200: the fold of the incarnation's deltas up to the version answered."""
    version, messages = op.answer["version"], op.answer["messages"]
    if asked is not None and key(version) > key(asked):
        return f"version {version} is after the one asked for, {asked}"
    why = _cursor(epoch, version, op) or _no_poison_upto(epoch, version, op)
    if why is None and asked is not None:
        why = _complete(epoch, version, asked, op)
    if why is None and messages != epoch.state(version):
        n = len(epoch.state(version))
        why = f"{len(messages)} messages differ from the fold up to {version} ({n} messages)"
    return why


def _any(candidates: list[Epoch], rule: Callable[[Epoch], Why], none: str) -> Why:
    """None when some candidate incarnation justifies the answer, else every reason."""
    reasons = []
    for epoch in candidates:
        why = rule(epoch)
        if why is None:
            return None
        reasons.append(f"[born {epoch.first.version}] {why}")
    return "; ".join(reasons) or none


def travel(ctx: Context, op: Op) -> Why:
    thread, asked = ctx.threads[op.refs[0]], op.call["at_version"]
    status, error = op.answer.get("status"), op.answer.get("error", {})
    candidates = thread.candidates(op)
    if status == 200:
        return _any(candidates, lambda e: _state(e, op, asked), "200 for no incarnation")
    if status == 410:
        return _any(candidates, lambda e: _gone(ctx, e, op, error), "410 for no incarnation")
    if status == 404 and error.get("field") == "at_version":
        return _any(candidates, lambda e: _unborn(e, asked, error), "404 for no incarnation")
    if status == 404:
        return None if thread.absent_during(op) else "404 while the thread existed"
    if status == 409 and error.get("code") == "poison_entry":
        return _any(candidates, lambda e: _poison(e, op, asked, error), "409 for no incarnation")
    if status == 503:
        return None  # every attempt overtaken by a trim or a delete: a refusal, not wrong
    return f"unexpected answer {op.answer}"


def _gone(ctx: Context, epoch: Epoch, op: Op, error: dict[str, Any]) -> Why:
    asked, oldest = op.call["at_version"], error.get("oldest_version") or ""
    if not oldest or key(asked) >= key(oldest):
        return f"oldest_version {oldest!r} is not after the version asked for"
    if key(asked) < epoch.first.key:
        return "the version precedes the incarnation (404, not 410)"
    if not epoch.trimmable(op.end_ms, ctx.retention_ms):
        return f"no commit before the read's end could have trimmed {epoch.first.version}"
    return _cursor(epoch, oldest, op)


def _unborn(epoch: Epoch, asked: str, error: dict[str, Any]) -> Why:
    if key(asked) >= epoch.first.key:
        return f"{asked} is not before the first entry {epoch.first.version}"
    if error.get("first_version") != epoch.first.version:
        return f"first_version {error.get('first_version')} is not {epoch.first.version}"
    return None


def _poison(epoch: Epoch, op: Op, asked: str, error: dict[str, Any]) -> Why:
    entry = epoch.entry(error.get("entry") or "0-0")
    if entry is None or not entry.poison:
        return f"{error.get('entry')} is no poison entry"
    if entry.key > key(asked):
        return f"{entry.version} is after the version asked for"
    if entry.written.start >= op.end:
        return f"{entry.version} was written after the read"
    if entry.skipped_by is not None and entry.skipped_by.end < op.start:
        return f"{entry.version} was skipped before the read"
    return None


def live(ctx: Context, op: Op) -> Why:
    thread = ctx.threads[op.refs[0]]
    status, error = op.answer.get("status"), op.answer.get("error", {})
    wanted = op.call.get("min_version")
    if status == 200:
        if wanted is not None and key(op.answer["version"]) < key(wanted):
            return f"version {op.answer['version']} is before min_version {wanted}"
        return _any(thread.candidates(op), lambda e: _state(e, op, None), "200 for no thread")
    if status == 404:
        return None if thread.absent_during(op) else "404 while the thread existed"
    if status == 409 and wanted is not None and error.get("code") == "version_not_reached":
        return None  # not applied within the wait (a poison entry holds it, or a backlog)
    return f"unexpected answer {op.answer}"


def final(ctx: Context, op: Op) -> Why:
    """Once everything has quiesced: the whole fold of the last incarnation, at its last
    entry (or at a skipped poison entry after it, where a skip moved the cursor)."""
    epoch = ctx.threads[op.refs[0]].epochs[-1]
    if not epoch.entries or epoch.deleted is not None:
        return None if op.answer.get("status") == 404 else f"{op.answer} for a deleted thread"
    if op.answer.get("status") != 200:
        return f"unexpected answer {op.answer}"
    deltas = [e for e in epoch.entries if not e.poison]
    last = deltas[-1].key if deltas else ZERO
    tail = {e.version for e in epoch.between(last, (2**64, 0)) if e.skipped_by is not None}
    ends = ({deltas[-1].version} if deltas else {"0-0"}) | tail
    if op.answer["version"] not in ends:
        return f"version {op.answer['version']}, not the last entry {sorted(ends)}"
    if op.answer["messages"] != epoch.state(op.answer["version"]):
        return "the state is not the fold of every acknowledged delta"
    return None


def recompute(ctx: Context, op: Op) -> Why:
    """Audit and rebuild (in process or the CLI): every thread matched (nobody
    corrupted a state, so a difference, or a rebuild that wrote, is wrong), or is not
    replayable for a reason the history justifies."""
    reasons = []
    for ref, result in op.answer["results"].items():
        why = _recomputed(ctx, ctx.threads[ref], op, result)
        if why is not None:
            reasons.append(f"{ref}: {why}")
    if op.via == "cli":
        matched = sum(1 for r in op.answer["results"].values() if r["outcome"] == "matched")
        if op.answer.get("without_result") or op.answer.get("matched") != matched:
            reasons.append(f"the summary does not account for every thread: {op.answer}")
    return "; ".join(reasons) or None


def _recomputed(ctx: Context, thread: Thread, op: Op, result: dict[str, Any]) -> Why:
    outcome, reason = result["outcome"], result.get("reason")
    candidates = thread.candidates(op)
    if outcome == "matched":
        if "version" not in result:  # the CLI's summary does not give it
            return None if candidates else "matched, but no incarnation existed"
        return _any(candidates, lambda e: _audited(e, op, result), "matched no thread")
    if outcome != "not replayable":
        return f"{outcome}: {result}"
    if reason == "trimmed":
        trimmed = [e for e in candidates if e.trimmable(op.end_ms, ctx.retention_ms)]
        return None if trimmed else "trimmed, but no commit could have trimmed it yet"
    if reason in ("never_written", "deleted"):
        return None if thread.absent_during(op) else f"{reason}, but the thread existed"
    if reason == "moving":
        return None
    return f"not replayable: {result}"


def _audited(epoch: Epoch, op: Op, result: dict[str, Any]) -> Why:
    """A match at ``version`` replayed exactly the deltas up to it."""
    version = result["version"]
    why = _cursor(epoch, version, op) or _no_poison_upto(epoch, version, op)
    if why is None and result["entries"] != epoch.deltas_upto(version):
        why = f"{result['entries']} entries replayed, {epoch.deltas_upto(version)} up to {version}"
    return why


def retry(ctx: Context, op: Op) -> Why:
    """A retry of a thread that did not exist says so; a skip is judged with the model
    (a skip of anything but a poison entry lost data)."""
    thread = ctx.threads[op.refs[0]]
    if op.answer.get("missing"):
        return None if thread.absent_during(op) else "no such thread, while it existed"
    if not thread.candidates(op):
        return f"{op.answer} for a thread that did not exist"
    if op.via == "cli" and op.answer.get("code") not in (0, 1):
        return f"exit {op.answer.get('code')}: {op.answer.get('stderr')}"
    return None


def write(ctx: Context, op: Op) -> Why:
    results = op.answer.get("results", [])
    if op.answer.get("status") != 202 or len(results) != len(op.call["deltas"]):
        return f"a valid delta refused: {op.answer}"
    return None


def nothing(ctx: Context, op: Op) -> Why:
    return None  # deletes and poison entries are judged while the model is built


RULES: dict[str, Callable[[Context, Op], Why]] = {
    "travel": travel,
    "copy": travel,
    "live": live,
    "final": final,
    "audit": recompute,
    "rebuild": recompute,
    "retry": retry,
    "write": write,
    "delete": nothing,
    "poison": nothing,
}

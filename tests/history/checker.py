"""The offline check of a history: every answer judged by its rule; counts for a report."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from tests.history import epochs, rules
from tests.history.model import History, Op, key


@dataclass
class Verdict:
    """Operations by kind and door, answers by kind, and the wrong answers (each with
    the operation's number, what it was and why no instant of it justifies the answer)."""

    operations: Counter[str] = field(default_factory=Counter)
    answers: Counter[str] = field(default_factory=Counter)
    wrong: list[str] = field(default_factory=list)
    #: what the writers were told: deltas acknowledged, poison entries appended, and
    #: the incarnations they make up
    log: Counter[str] = field(default_factory=Counter)

    @property
    def total(self) -> int:
        return sum(self.operations.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "operations": self.total,
            "operations_by_kind": dict(sorted(self.operations.items())),
            "log": dict(sorted(self.log.items())),
            "answers_by_kind": dict(sorted(self.answers.items())),
            "wrong_answers": len(self.wrong),
            "wrong": self.wrong[:50],
        }


def _answer(op: Op, newest: dict[str, tuple[int, int]]) -> list[str]:
    """How an answer is counted: the status (with the error code), or each thread's
    outcome (with the reason); a time-travel 200 says whether the version asked for was
    the newest acknowledged when the read began."""
    a = op.answer
    if "exception" in a:
        return [f"{op.kind} exception"]
    if op.kind in ("audit", "rebuild"):
        return [f"{op.kind} {r['outcome']} {r.get('reason', '')}".rstrip()
                for r in a["results"].values()]
    if op.kind == "retry":
        done = "no such thread" if a.get("missing") else "skipped" if a.get("skipped") else "lifted"
        return [f"retry {done}"]
    if op.kind == "poison":
        return [f"poison {op.call['poison']}"]
    status = f"{op.kind} {a.get('status')} {a.get('error', {}).get('code', '')}".rstrip()
    if op.kind in ("travel", "copy") and a.get("status") == 200:
        asked = key(op.call["at_version"])
        status += " (newest)" if asked >= newest.get(op.refs[0], (0, 0)) else " (earlier)"
    return [status]


def _newest_before(ops: list[Op]) -> dict[int, dict[str, tuple[int, int]]]:
    """For each travel, the newest version of its thread acknowledged before it began."""
    done = sorted((o for o in ops if o.kind in ("write", "poison")), key=lambda o: o.end)
    out: dict[int, dict[str, tuple[int, int]]] = {}
    newest: dict[str, tuple[int, int]] = {}
    at = 0
    for op in sorted((o for o in ops if o.kind in ("travel", "copy")), key=lambda o: o.start):
        while at < len(done) and done[at].end < op.start:
            w = done[at]
            versions = [r["version"] for r in w.answer.get("results", [])]
            versions += [w.answer["entry"]] if "entry" in w.answer else []
            for ref, version in zip(_refs_of(w), versions, strict=False):
                newest[ref] = max(newest.get(ref, (0, 0)), key(version))
            at += 1
        out[op.n] = {op.refs[0]: newest.get(op.refs[0], (0, 0))}
    return out


def _refs_of(op: Op) -> list[str]:
    return [d["ref"] for d in op.call["deltas"]] if op.kind == "write" else op.refs


def check(history: History, retention_ms: int) -> Verdict:
    """Judge every operation; raises :class:`~tests.history.epochs.Inconclusive` when
    the history cannot be judged."""
    ops = history.ops
    verdict = Verdict()
    refs = sorted({ref for op in ops for ref in op.refs})
    threads = {ref: epochs.thread(ops, ref, verdict.wrong) for ref in refs}
    epochs.skips(ops, threads, verdict.wrong)
    for model in threads.values():
        for epoch in (e for e in model.epochs if e.entries):
            verdict.log["incarnations"] += 1
            verdict.log["poison entries"] += sum(1 for e in epoch.entries if e.poison)
            verdict.log["deltas acknowledged"] += sum(1 for e in epoch.entries if not e.poison)
    ctx = rules.Context(threads, retention_ms)
    newest = _newest_before(ops)
    for op in ops:
        verdict.operations[f"{op.kind} ({op.via})"] += 1
        verdict.answers.update(_answer(op, newest.get(op.n, {})))
        why = (
            op.answer["exception"] if "exception" in op.answer else rules.RULES[op.kind](ctx, op)
        )
        if why is not None:
            call = repr(op.call)[:300]
            verdict.wrong.append(f"op {op.n} {op.kind} ({op.via}) {op.refs} {call}: {why}")
    return verdict

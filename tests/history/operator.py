"""The operator's tools: ``retry [--skip]``, ``recompute --audit`` and ``--rebuild``.

In process through the store and :mod:`threadfold.workers.replay.replay` (most of them), and
now and then through the ``threadfold`` command as an operator runs it (a process of
its own; the recompute runs as Celery tasks on the workers).
"""

from __future__ import annotations

import re
import subprocess
from typing import Any, Final

from tests.history.model import Kind, Op
from tests.history.session import Session
from tests.history.writes import thread_id
from threadfold.workers.replay.replay import Audit, NotReplayable, audit_many, rebuild_many

#: How long a command may take before it counts as hung (a wrong answer).
CLI_TIMEOUT: Final = 120
#: A thread the summary of ``recompute`` names: "  <outcome>: <ref>: <detail>".
_NAMED: Final = re.compile(r"^  (differs|would change|rebuilt|not replayable|failed): (\S+): (.*)$")
_MATCHED: Final = re.compile(r"threads?: (\d+) matched")
_SKIPPED: Final = re.compile(r"skipped entry (\d+-\d+)")


def _cli(session: Session, op: Op, *args: str) -> subprocess.CompletedProcess[str]:
    target = session.target
    done = subprocess.run(
        [*target.cli, *args],
        env=target.cli_env,
        cwd=target.cli_cwd,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT,
        check=False,
    )
    op.answer.update(code=done.returncode, stdout=done.stdout[-4000:], stderr=done.stderr[-2000:])
    return done


def retry(session: Session, ref: str, *, skip: bool, via: str) -> str:
    """The entry skipped ('' for none)."""
    with session.history.op("retry", via, [ref], skip=skip) as op:
        if via == "cli":
            done = _cli(session, op, "retry", thread_id(ref), *(["--skip"] if skip else []))
            found = _SKIPPED.search(done.stdout)
            op.answer["missing"] = "no such thread" in done.stderr
            op.answer["skipped"] = found.group(1) if found else ""
        else:
            retried = session.store.retry(ref, session.settings.wake_ttl_ms, skip=skip)
            op.answer["missing"] = retried is None
            op.answer["skipped"] = retried.skipped if retried else ""
            if retried is not None and retried.woke:
                session.waker.wake([ref])
    skipped: str = op.answer.get("skipped", "")
    if skipped:
        session.known.skipped(ref, skipped)
    return skipped


def _result(found: Audit | NotReplayable) -> dict[str, Any]:
    if isinstance(found, NotReplayable):
        return {
            "outcome": "not replayable",
            "reason": found.reason.value,
            "oldest_version": found.oldest_version,
            "first_version": found.first_version,
            "entry": found.entry,
            "message": str(found),
        }
    outcome = "rebuilt" if found.rebuilt else "differs" if found.differences else "matched"
    return {"outcome": outcome, "version": found.version, "entries": found.entries,
            "differences": found.differences[:3]}


def recompute(session: Session, refs: list[str], kind: Kind) -> None:
    """Audit or rebuild ``refs`` in process (one slice, read together)."""
    run = rebuild_many if kind == "rebuild" else audit_many
    with session.history.op(kind, "replay", refs) as op:
        found = run(session.store, refs, merge_chunks=session.settings.merge_chunks)
        op.answer["results"] = {ref: _result(f) for ref, f in zip(refs, found, strict=True)}


def _reason(detail: str) -> str:
    """The reason a summary line gives, as :class:`~threadfold.workers.replay.prefix.Reason`."""
    if "retention trimmed" in detail:
        return "trimmed"
    if "no such thread" in detail:
        return "never_written"
    if "overtaken" in detail or "kept moving" in detail:
        return "moving"
    if "log entry" in detail:
        return "poison"
    return "unknown"


def recompute_cli(session: Session, refs: list[str], kind: Kind) -> None:
    """``threadfold recompute --audit|--rebuild --threads ...``: each thread the summary
    does not name matched."""
    mode = "--rebuild" if kind == "rebuild" else "--audit"
    names = ",".join(thread_id(ref) for ref in refs)
    with session.history.op(kind, "cli", refs) as op:
        done = _cli(session, op, "recompute", mode, "--threads", names, "--timeout", "90")
        results: dict[str, dict[str, Any]] = {ref: {"outcome": "matched"} for ref in refs}
        for line in done.stdout.splitlines():
            named = _NAMED.match(line)
            if named is None:
                continue
            outcome, ref, detail = named.groups()
            result: dict[str, Any] = {"outcome": outcome, "message": detail}
            if outcome in ("not replayable", "failed"):
                result = {"outcome": "not replayable", "reason": _reason(detail),
                          "message": detail}
            results[ref] = result
        op.answer["results"] = results
        # The head line's count of matched threads must be those it does not name, and
        # a thread left without a result is named on another line: both are checked.
        counted = _MATCHED.search(done.stdout)
        op.answer["matched"] = int(counted.group(1)) if counted else -1
        op.answer["without_result"] = "without a result" in done.stdout

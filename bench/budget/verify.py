"""The result checks: a figure counts only if the states its CPU bought are right.

* every thread of every part of every round (the warm-up's too) equals the
  one-delta-at-a-time fold of what its calls were promised (the oracle,
  :class:`threadfold.testing.Ledger`, through :func:`bench.pipeline.e2e.verify`: no backlog, the
  version the last call was given, the log trimmed, every index exact, the state);
* a sample of each part's threads equals LangGraph's ``add_messages`` applied delta by
  delta to the same dicts (each with the id it was stamped with): the oracle is
  threadfold's own fold, this is LangGraph's;
* the floor's fold ended with each thread's stored length (it folded the same deltas);
* every ``/healthz`` of the API floor answered 200.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from langgraph.graph.message import add_messages

from bench.common.checks import first_difference, lc_dump
from bench.common.stack import Stack
from bench.pipeline.e2e import verify
from bench.pipeline.workload import ref_of, thread_id
from threadfold.testing import Ledger
from threadfold.testing.stored import state_dump
from threadfold.workers.storage.store import Store

#: Threads of each part folded by LangGraph too.
SAMPLE: Final = 20


@dataclass(frozen=True)
class Failure:
    """A check that failed, as cli.finish lists it."""

    name: str
    detail: str


def states(store: Store, stack: Stack, sent: Ledger, part: str) -> list[Failure]:
    check = verify(store, stack.settings, sent)
    return [] if check.ok else [Failure(f"{part}: {check.name}", check.detail)]


def langgraph(store: Store, sent: Ledger, part: str, sample: int = SAMPLE) -> list[Failure]:
    """The first ``sample`` threads against LangGraph's reducer."""
    failures = []
    for ref in sorted(sent.threads())[:sample]:
        theirs: Any = []
        for _, messages, ids in sent.deltas(ref):
            stamped: list[Any] = [{**m, "id": i} for m, i in zip(messages, ids, strict=True)]
            theirs = add_messages(theirs, stamped)
        detail = first_difference(state_dump(store, ref), lc_dump(theirs))
        if detail:
            failures.append(Failure(f"{part}: {ref} is not LangGraph's add_messages", detail))
    return failures


def floor_fold(stack: Stack, lengths: Sequence[int], prefix: str, part: str) -> list[Failure]:
    """The floor fold's length per thread against the stored threads of ``prefix``."""
    refs = [ref_of(thread_id(t, prefix)) for t in range(len(lengths))]
    stored = [s.messages if s is not None else -1 for s in stack.statuses(refs)]
    wrong = [r for r, a, b in zip(refs, lengths, stored, strict=True) if a != b]
    if not wrong:
        return []
    return [Failure(f"{part}: the floor's fold", f"{len(wrong)} threads' lengths differ "
                                                 f"from the stored ones, e.g. {wrong[:3]}")]


def healthz(not_ok: int, part: str) -> list[Failure]:
    if not not_ok:
        return []
    return [Failure(f"{part}: GET /healthz", f"{not_ok} answers were not 200")]

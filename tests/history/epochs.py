"""What the history says each thread's log was: incarnations, entries, skips, absences.

A thread's writes and deletes never overlap (the driver's locks), so the history orders
them: the entries written between two deletes are one incarnation (an *epoch*). An
epoch exists from the start of its first write (whose append makes the thread) to the
end of the delete that ends it; the thread may be absent from the start of a delete
that found it until the end of the next epoch's first write. Every entry carries the
operation that wrote it, and a poison entry the retry that skipped it, so each rule can
ask whether something could have happened before or after a read.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass, field

from tests.history.model import Op, key
from tests.history.oracle import Delta, Dumped, Fold


class Inconclusive(Exception):
    """Raised when the history cannot be checked: a write without an answer (its entry
    may or may not be in the log), or the driver's own exclusion broken."""


@dataclass
class Entry:
    version: str
    key: tuple[int, int]
    written: Op
    #: the messages sent and the ids they were stored under; None: a poison entry
    delta: Delta | None
    skipped_by: Op | None = None

    @property
    def poison(self) -> bool:
        return self.delta is None

    def skipped_before(self, t: float) -> bool:
        """Whether a skip of it had started before ``t`` (it may have taken effect)."""
        return self.skipped_by is not None and self.skipped_by.start < t


@dataclass
class Epoch:
    ref: str
    entries: list[Entry] = field(default_factory=list)
    born: Op | None = None
    deleted: Op | None = None
    _deltas: list[Entry] = field(default_factory=list)
    _keys: list[tuple[int, int]] = field(default_factory=list)
    _delta_keys: list[tuple[int, int]] = field(default_factory=list)
    _fold: Fold | None = None

    def seal(self) -> None:
        self.entries.sort(key=lambda e: e.key)
        self._deltas = [e for e in self.entries if not e.poison]
        self._keys = [e.key for e in self.entries]
        self._delta_keys = [e.key for e in self._deltas]

    @property
    def first(self) -> Entry:
        return self.entries[0]

    def overlaps(self, op: Op) -> bool:
        if self.born is None:
            return False
        until = self.deleted.end if self.deleted is not None else math.inf
        return self.born.start < op.end and op.start < until

    def entry(self, version: str) -> Entry | None:
        at = bisect.bisect_left(self._keys, key(version))
        found = self.entries[at] if at < len(self.entries) else None
        return found if found is not None and found.version == version else None

    def deltas_upto(self, version: str) -> int:
        """How many deltas have a version at or before ``version``."""
        return bisect.bisect_right(self._delta_keys, key(version))

    def between(self, low: tuple[int, int], high: tuple[int, int]) -> list[Entry]:
        """The entries with a version in (low, high]."""
        lo = bisect.bisect_right(self._keys, low)
        return self.entries[lo : bisect.bisect_right(self._keys, high)]

    def state(self, version: str) -> Dumped:
        """The fold of the deltas at or before ``version``."""
        if self._fold is None:
            self._fold = Fold([e.delta for e in self._deltas if e.delta is not None])
        return self._fold.state(self.deltas_upto(version))

    def trimmable(self, by_ms: float, retention_ms: int) -> bool:
        """Whether a commit before ``by_ms`` could have trimmed the first entry: a commit
        at Redis time T drops the applied entries older than ``T - retention``."""
        return self.first.key[0] + retention_ms < by_ms


@dataclass
class Thread:
    ref: str
    epochs: list[Epoch] = field(default_factory=list)
    absent: list[tuple[float, float]] = field(default_factory=list)
    _born: list[float] = field(default_factory=list)
    _live: list[Epoch] = field(default_factory=list)

    def index(self) -> None:
        """Sort what :meth:`candidates` and :meth:`absent_during` search (a long run has
        thousands of incarnations per thread)."""
        self._live = [e for e in self.epochs if e.born is not None]
        self._born = [e.born.start for e in self._live if e.born is not None]
        self.absent.sort()

    def candidates(self, op: Op) -> list[Epoch]:
        """The incarnations that existed at some instant of ``op``: born before it
        ended, not deleted before it started (they follow one another in time)."""
        found = []
        at = bisect.bisect_left(self._born, op.end) - 1
        while at >= 0:
            epoch = self._live[at]
            if epoch.overlaps(op):
                found.append(epoch)
            elif epoch.deleted is not None and epoch.deleted.end <= op.start:
                break
            at -= 1
        return found[::-1]

    def absent_during(self, op: Op) -> bool:
        at = bisect.bisect_left(self.absent, (op.end, -math.inf)) - 1
        return any(self.absent[n][1] > op.start for n in range(max(at - 2, 0), at + 1))


def _timeline(ops: list[Op], ref: str) -> Iterator[Op]:
    """The writes, poison entries and deletes of ``ref``, in the order the locks made."""
    mine = [o for o in ops if o.kind in ("write", "poison", "delete") and ref in o.refs]
    return iter(sorted(mine, key=lambda o: o.start))


def _entries(op: Op, ref: str) -> list[Entry]:
    if op.kind == "poison":
        entry = op.answer.get("entry")
        return [Entry(entry, key(entry), op, None)] if entry else []
    if op.answer.get("status") != 202 or "results" not in op.answer:
        if "exception" in op.answer or (op.answer.get("status") or 0) >= 500:
            raise Inconclusive(f"op {op.n}: a write without an answer: {op.answer}")
        return []  # refused whole (a 4xx): nothing appended; judged by its rule
    found = []
    for sent, got in zip(op.call["deltas"], op.answer["results"], strict=True):
        if sent["ref"] == ref:
            delta = (sent["messages"], got["ids"])
            found.append(Entry(got["version"], key(got["version"]), op, delta))
    return found


def _check_exclusion(ops: list[Op], ref: str) -> None:
    """No write of ``ref`` overlaps a delete of it (the driver's locks): one sweep."""
    writes_until = deletes_until = -math.inf
    for op in _timeline(ops, ref):
        if op.kind == "delete":
            if writes_until > op.start or deletes_until > op.start:
                raise Inconclusive(f"delete {op.n} of {ref} overlaps another operation")
            deletes_until = op.end
        else:
            if deletes_until > op.start:
                raise Inconclusive(f"op {op.n} overlaps a delete of {ref}")
            writes_until = max(writes_until, op.end)


def thread(ops: list[Op], ref: str, problems: list[str]) -> Thread:
    """Build ``ref``'s epochs and absences; what contradicts the model goes to
    ``problems`` (a delete answered 404 for a thread that existed, or 204 for none)."""
    _check_exclusion(ops, ref)
    model = Thread(ref)
    epoch, seen = Epoch(ref), set()
    for op in _timeline(ops, ref):
        if op.kind != "delete":
            for entry in _entries(op, ref):
                if entry.version not in seen:  # a retried delta_id answers the same one
                    seen.add(entry.version)
                    epoch.entries.append(entry)
                    epoch.born = epoch.born or op
            continue
        found = op.answer.get("status")
        if found != (204 if epoch.entries else 404):
            problems.append(f"op {op.n}: DELETE of {ref} with {len(epoch.entries)} entries "
                            f"answered {found}")
        if epoch.entries:
            epoch.deleted = op
            model.epochs.append(epoch)
            epoch = Epoch(ref)
    model.epochs.append(epoch)
    for e in model.epochs:
        e.seal()
    _absences(model)
    model.index()
    _check_order(model, problems)
    return model


def _absences(model: Thread) -> None:
    gone_since = -math.inf
    for epoch in model.epochs:
        if epoch.born is None:
            continue
        model.absent.append((gone_since, epoch.born.end))
        gone_since = epoch.deleted.start if epoch.deleted is not None else math.nan
    if not math.isnan(gone_since):
        model.absent.append((gone_since, math.inf))


def _check_order(model: Thread, problems: list[str]) -> None:
    """Each incarnation's entries follow the previous one's (the driver waited for
    Redis's clock to pass them before writing again)."""
    live = [e for e in model.epochs if e.entries]
    for before, after in itertools.pairwise(live):
        if after.first.key <= before.entries[-1].key:
            problems.append(f"{model.ref}: incarnation starting {after.first.version} does not "
                            f"follow the one ending {before.entries[-1].version}")


def skips(ops: list[Op], threads: dict[str, Thread], problems: list[str]) -> None:
    """Attach each skip to its poison entry; a skip of anything else lost data."""
    for op in ops:
        skipped = op.answer.get("skipped") if op.kind == "retry" else None
        if not skipped:
            continue
        model = threads[op.refs[0]]
        found = [e for epoch in model.candidates(op) if (e := epoch.entry(skipped))]
        if not found:
            problems.append(f"op {op.n}: retry skipped {skipped}, no entry of {model.ref}")
        elif not found[0].poison:
            problems.append(f"op {op.n}: retry skipped {skipped}, an acknowledged delta")
        elif found[0].skipped_by is not None:
            problems.append(f"op {op.n}: retry skipped {skipped} again "
                            f"(op {found[0].skipped_by.n} had)")
        else:
            found[0].skipped_by = op

"""The mixed workload: per thread, appends (~70%), updates (~20%), removes of live ids (~10%).

Deltas are made just in time, one message each, because updates and removes may only
target ids the producer has been told about: a client-id append is known at once, an
id-less one only once ``enqueue_many`` returned the id it stamped (as a real client
would learn it). Every input is a deterministic function of the seed and of the ids
returned.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from bench.common.inputs import message_dict, new_id, removal
from threadfold.core.keys import DEFAULT_TENANT
from threadfold.workers.ingest.producer import Delta

if TYPE_CHECKING:  # an A/B runs bench against older trees, where results had another home
    from threadfold.core.results import Appended

Dict = dict[str, Any]
APPEND: Final = "append"
UPDATE: Final = "update"
REMOVE: Final = "remove"
_TEMPLATES: Final = 256


def thread_id(i: int, prefix: str = "bench") -> str:
    return f"{prefix}-{i:05d}"


def ref_of(thread: str) -> str:
    return f"{DEFAULT_TENANT}/{thread}"


def templates(seed: int) -> list[Dict]:
    """Realistic messages without ids (OpenAI and LangChain forms, tool calls, metadata)."""
    rng = random.Random(seed)
    out = []
    for i in range(1, _TEMPLATES + 1):
        message = message_dict(i, rng)
        del message["id"]
        out.append(message)
    return out


@dataclass
class _Live:
    """The ids a thread holds, for O(1) random picks and removes."""

    ids: list[str] = field(default_factory=list)
    slot: dict[str, int] = field(default_factory=dict)

    def add(self, ident: str) -> None:
        self.slot[ident] = len(self.ids)
        self.ids.append(ident)

    def pick(self, rng: random.Random) -> str:
        return self.ids[rng.randrange(len(self.ids))]

    def discard(self, ident: str) -> None:
        hole = self.slot.pop(ident)
        last = self.ids.pop()
        if last != ident:
            self.ids[hole] = last
            self.slot[last] = hole


@dataclass(frozen=True, slots=True)
class Planned:
    """One delta to send, and what it is."""

    thread: int
    op: str
    message: Dict
    idless: bool

    def delta(self, prefix: str) -> Delta:
        return Delta(thread_id(self.thread, prefix), [self.message])


class Mix:
    """Deltas for ``threads`` threads; ``client_ids`` is the share of appends carrying an id."""

    def __init__(self, threads: int, seed: int, *, client_ids: float = 0.5) -> None:
        self.rng = random.Random(seed)
        self.templates = templates(seed)
        self.live = [_Live() for _ in range(threads)]
        self.client_ids = client_ids
        self.ops: Counter[str] = Counter()

    def next(self, thread: int) -> Planned:
        """The next delta of ``thread``; an update or remove targets an id known now."""
        rng, live = self.rng, self.live[thread]
        roll = rng.random()
        template = self.templates[rng.randrange(len(self.templates))]
        if roll < 0.7 or not live.ids:
            planned = self._append(thread, template)
        elif roll < 0.9:
            planned = Planned(thread, UPDATE, {**template, "id": live.pick(rng)}, False)
        else:
            target = live.pick(rng)
            live.discard(target)
            planned = Planned(thread, REMOVE, removal(target), False)
        self.ops[planned.op] += 1
        return planned

    def _append(self, thread: int, template: Dict) -> Planned:
        if self.rng.random() >= self.client_ids:
            return Planned(thread, APPEND, dict(template), True)
        ident = f"run-{new_id(self.rng)}"
        self.live[thread].add(ident)
        return Planned(thread, APPEND, {**template, "id": ident}, False)

    def learn(self, planned: Sequence[Planned], results: Sequence[Appended]) -> None:
        """Make the ids the producer stamped on id-less appends targetable."""
        for p, result in zip(planned, results, strict=True):
            if p.idless and result.ids:
                self.live[p.thread].add(result.ids[0])


def schedule(threads: int, per_thread: int, bulk: int, run: int, seed: int) -> Iterator[list[int]]:
    """Thread indices of each bulk: ``run`` consecutive deltas per thread, threads shuffled
    per round, so every thread gets ``per_thread`` deltas in ``per_thread / run`` rounds."""
    rng = random.Random(seed)
    rounds, rest = divmod(per_thread, run)
    runs = [run] * rounds + ([rest] if rest else [])
    pending: list[int] = []
    for length in runs:
        order = list(range(threads))
        rng.shuffle(order)
        for t in order:
            pending.extend([t] * length)
            if len(pending) >= bulk:
                yield pending[:bulk]
                pending = pending[bulk:]
    if pending:
        yield pending


def round_robin(threads: int, per_thread: int) -> Iterator[int]:
    """One delta per thread per round: consecutive deltas of a thread are ``threads`` apart."""
    for _ in range(per_thread):
        yield from range(threads)
